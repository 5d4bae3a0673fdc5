//! Vectors as the stores keep and compare them: normalised `f32`s, scored by dot product (the
//! cosine similarity of unit vectors), stored as little-endian bytes.

/// Scales `vector` to length 1 (a zero vector stays zero: it scores 0 against everything).
pub(crate) fn normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm > 0.0 {
        for x in vector.iter_mut() {
            // Narrowing back to the stored precision is the point.
            #[allow(clippy::cast_possible_truncation)]
            let scaled = (f64::from(*x) / norm) as f32;
            *x = scaled;
        }
    }
}

/// The dot product of two vectors of one length: their cosine similarity when both are unit.
///
/// Eight running sums let the compiler keep them in one SIMD register, which is what makes
/// scoring every stored vector fast enough to need no approximate index below millions of items.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut sums = [0.0_f32; LANES];
    let (a_chunks, a_rest) = a.as_chunks::<LANES>();
    let (b_chunks, b_rest) = b.as_chunks::<LANES>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for lane in 0..LANES {
            sums[lane] += x[lane] * y[lane];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

/// A vector as stored: its numbers as little-endian bytes.
#[cfg(feature = "sqlite")]
pub(crate) fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector of `dims` numbers; the reason it is not one otherwise.
#[cfg(feature = "sqlite")]
pub(crate) fn from_bytes(bytes: &[u8], dims: usize) -> Result<Vec<f32>, String> {
    let (chunks, rest) = bytes.as_chunks::<4>();
    if !rest.is_empty() || chunks.len() != dims {
        return Err(format!("it holds {} bytes, not the {} of a vector of {dims} numbers", bytes.len(), dims * 4));
    }
    Ok(chunks.iter().map(|chunk| f32::from_le_bytes(*chunk)).collect())
}

/// The 8-bit copy of a unit vector: its codes, what one step of them is worth, and how far the
/// copy is from the vector (the length of `exact - scale * codes`).
pub(crate) fn quantize(exact: &[f32]) -> (Vec<i8>, f32, f32) {
    let largest = exact.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
    // Every number divided by the scale lies within ±127, so the cast cannot saturate.
    #[allow(clippy::cast_possible_truncation)]
    let codes: Vec<i8> = exact.iter().map(|x| (x / scale).round() as i8).collect();
    let error = exact
        .iter()
        .zip(&codes)
        .map(|(x, c)| {
            let off = f64::from(*x) - f64::from(scale) * f64::from(*c);
            off * off
        })
        .sum::<f64>()
        .sqrt();
    #[allow(clippy::cast_possible_truncation)]
    let error = error as f32;
    (codes, scale, error)
}

/// How far the score of two 8-bit copies can be from the exact score, their errors being `e`
/// and `f`: v·u - (s·c)·(t·d) = (s·c)·f + e·(t·d) + e·f, with |s·c| ≤ 1 + e and |t·d| ≤ 1 + f;
/// the last term covers the rounding of the f32 sums.
pub(crate) fn bound(e: f32, f: f32) -> f32 {
    (1.0 + e) * f + e * (1.0 + f) + e * f + 1e-4
}

/// The dot product of two 8-bit copies.
pub(crate) fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut sums = [0_i32; LANES];
    let (a_chunks, a_rest) = a.as_chunks::<LANES>();
    let (b_chunks, b_rest) = b.as_chunks::<LANES>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for lane in 0..LANES {
            sums[lane] += i32::from(x[lane]) * i32::from(y[lane]);
        }
    }
    let tail: i32 = a_rest.iter().zip(b_rest).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum();
    sums.iter().sum::<i32>() + tail
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn unit(v: Vec<f32>) -> Vec<f32> {
        let mut v = v;
        normalize(&mut v);
        v
    }

    /// Pseudo-random unit vectors of `dims` numbers.
    pub(crate) fn random(count: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..count)
            .map(|_| {
                unit(
                    (0..dims)
                        .map(|_| {
                            state ^= state << 13;
                            state ^= state >> 7;
                            state ^= state << 17;
                            f32::from(u16::try_from(state >> 48).unwrap()) / 65_536.0 - 0.5
                        })
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn normalised_vectors_score_their_cosine() {
        let a = unit(vec![3.0, 4.0]);
        assert!((a[0] - 0.6).abs() < 1e-6 && (a[1] - 0.8).abs() < 1e-6);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, [0.0; 3]);
        let long: Vec<f32> = (0..37_u16).map(f32::from).collect();
        let expected: f32 = long.iter().map(|x| x * x).sum();
        assert!((dot(&long, &long) - expected).abs() < 1e-2, "the tail past the last whole chunk counts");
    }

    #[test]
    fn the_8_bit_estimate_is_within_its_bound() {
        let query = random(1, 97, 4).remove(0);
        let (q_codes, q_scale, q_error) = quantize(&query);
        for v in random(200, 97, 3) {
            let exact = dot(&query, &v);
            let (codes, scale, error) = quantize(&v);
            #[allow(clippy::cast_precision_loss)]
            let approx = scale * q_scale * dot_codes(&codes, &q_codes) as f32;
            let off = bound(error, q_error);
            assert!((exact - approx).abs() <= off, "{exact} {approx} {off}");
            assert!(off < 0.05, "the 8-bit copy is close: {off}");
        }
    }

    #[test]
    #[cfg(feature = "sqlite")]
    fn stored_bytes_round_trip_and_a_wrong_length_is_refused() {
        let v = vec![0.5, -1.25, 3.0];
        assert_eq!(from_bytes(&to_bytes(&v), 3).unwrap(), v);
        assert!(from_bytes(&to_bytes(&v), 4).unwrap_err().contains("12 bytes"));
        assert!(from_bytes(&[0, 1, 2], 1).is_err());
    }
}
