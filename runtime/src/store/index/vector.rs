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
pub(crate) fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector of `dims` numbers; the reason it is not one otherwise.
pub(crate) fn from_bytes(bytes: &[u8], dims: usize) -> Result<Vec<f32>, String> {
    let (chunks, rest) = bytes.as_chunks::<4>();
    if !rest.is_empty() || chunks.len() != dims {
        return Err(format!("it holds {} bytes, not the {} of a vector of {dims} numbers", bytes.len(), dims * 4));
    }
    Ok(chunks.iter().map(|chunk| f32::from_le_bytes(*chunk)).collect())
}

/// A unit vector as the stores score it: its numbers, and a copy of them in 8 bits.
///
/// Scoring every stored vector reads all of them, and 100,000 vectors of 384 `f32`s are 150 MB:
/// the scan is bound by memory, not arithmetic. The 8-bit copy is a quarter of that. Scores from
/// it are off by at most a bound known for each vector (from its rounding error and the
/// query's), so [`Ranking`] uses them only to rule out what cannot be among the best, and
/// scores what can in full: the order and the scores it gives are the exact ones.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Vector {
    exact: Vec<f32>,
    codes: Vec<i8>,
    /// What one step of `codes` is worth.
    scale: f32,
    /// The length of `exact - scale * codes`: how far the copy is from the vector.
    error: f32,
}

impl Vector {
    /// `exact` (a unit vector, or zero) and its 8-bit copy.
    pub(crate) fn new(exact: Vec<f32>) -> Self {
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
        Self { exact, codes, scale, error }
    }

    /// The score against `other` from the 8-bit copies, and how far from the exact score it can
    /// be.
    fn estimate(&self, other: &Self) -> (f32, f32) {
        #[allow(clippy::cast_precision_loss, reason = "at most 384 × 127² in magnitude: exact in an f32")]
        let approx = self.scale * other.scale * dot_codes(&self.codes, &other.codes) as f32;
        let (e, f) = (self.error, other.error);
        // v·u - (s·c)·(t·d) = (s·c)·f + e·(t·d) + e·f, with |s·c| ≤ 1 + e and |t·d| ≤ 1 + f;
        // the last term covers the rounding of the f32 sums.
        (approx, (1.0 + e) * f + e * (1.0 + f) + e * f + 1e-4)
    }
}

/// The dot product of two 8-bit copies.
fn dot_codes(a: &[i8], b: &[i8]) -> i32 {
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

/// The exact score of an item: its best-matching vector's.
fn best(query: &Vector, vectors: &[Vector]) -> f32 {
    vectors.iter().map(|v| dot(&query.exact, &v.exact)).fold(f32::NEG_INFINITY, f32::max)
}

/// Items (each the vectors of its texts) in order of their exact score against a query, best
/// first, ties in the order given; an item without vectors is never given. Lazy: it gives the
/// best `batch` items, then the next twice as many, and so on, each batch scored in full only
/// where the 8-bit estimates cannot rule an item out, so a search wanting ten results out of
/// a hundred thousand scores a few dozen in full.
pub(crate) struct Ranking<'v> {
    query: Vector,
    items: Vec<&'v [Vector]>,
    /// Each item's lowest and highest possible score.
    bounds: Vec<(f32, f32)>,
    /// The items not given yet.
    left: Vec<usize>,
    ready: std::collections::VecDeque<(f32, usize)>,
    batch: usize,
}

impl<'v> Ranking<'v> {
    /// Ranks `items` against `query` (a unit vector), `batch` at a time to begin with.
    pub(crate) fn new(query: Vec<f32>, items: Vec<&'v [Vector]>, batch: usize) -> Self {
        let query = Vector::new(query);
        let bounds = items
            .iter()
            .map(|vectors| {
                vectors.iter().fold((f32::NEG_INFINITY, f32::NEG_INFINITY), |(low, high), v| {
                    let (approx, off) = v.estimate(&query);
                    (low.max(approx - off), high.max(approx + off))
                })
            })
            .collect();
        let left = (0..items.len()).filter(|&at| !items[at].is_empty()).collect();
        Self { query, items, bounds, left, ready: std::collections::VecDeque::new(), batch: batch.max(1) }
    }

    /// Works out the next batch: the `m` best items left are among those whose highest
    /// possible score reaches the `m`-th highest lowest possible score (at least `m` items
    /// score that much), so only those are scored in full.
    fn next_batch(&mut self) {
        let m = self.batch.min(self.left.len());
        let mut lows: Vec<f32> = self.left.iter().map(|&at| self.bounds[at].0).collect();
        let (_, threshold, _) = lows.select_nth_unstable_by(m - 1, |a, b| b.total_cmp(a));
        let threshold = *threshold;
        let mut scored: Vec<(f32, usize)> = self
            .left
            .iter()
            .filter(|&&at| self.bounds[at].1 >= threshold)
            .map(|&at| (best(&self.query, self.items[at]), at))
            .collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(m);
        let mut taken = vec![false; self.items.len()];
        for &(_, at) in &scored {
            taken[at] = true;
        }
        self.left.retain(|&at| !taken[at]);
        self.ready.extend(scored);
        // Each batch doubles, so a search that reads far down the ranking does O(n log n) work.
        self.batch = self.batch.saturating_mul(2);
    }
}

impl Iterator for Ranking<'_> {
    type Item = (f32, usize);

    fn next(&mut self) -> Option<Self::Item> {
        if self.ready.is_empty() && !self.left.is_empty() {
            self.next_batch();
        }
        self.ready.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let mut v = v;
        normalize(&mut v);
        v
    }

    /// Pseudo-random unit vectors of `dims` numbers.
    fn random(count: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
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
    fn the_estimate_is_within_its_bound() {
        let vectors = random(200, 97, 3);
        let query = Vector::new(random(1, 97, 4).remove(0));
        for v in vectors {
            let exact = dot(&query.exact, &v);
            let (approx, off) = Vector::new(v).estimate(&query);
            assert!((exact - approx).abs() <= off, "{exact} {approx} {off}");
            assert!(off < 0.05, "the 8-bit copy is close: {off}");
        }
    }

    #[test]
    fn the_ranking_is_the_exact_order_whatever_the_batch() {
        let vectors: Vec<Vector> = random(500, 64, 7).into_iter().map(Vector::new).collect();
        // Item 3 has two texts; item 5 none; items 10 and 11 are the same vector (a tie).
        let mut items: Vec<Vec<Vector>> = vectors.iter().take(300).map(|v| vec![v.clone()]).collect();
        items[3].push(vectors[400].clone());
        items[5].clear();
        items[11] = items[10].clone();
        let query = random(1, 64, 9).remove(0);
        let slices: Vec<&[Vector]> = items.iter().map(Vec::as_slice).collect();
        let mut expected: Vec<(f32, usize)> = items
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(at, v)| (v.iter().map(|v| dot(&query, &v.exact)).fold(f32::NEG_INFINITY, f32::max), at))
            .collect();
        expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for batch in [1, 3, 10, 1000] {
            let ranked: Vec<(f32, usize)> = Ranking::new(query.clone(), slices.clone(), batch).collect();
            assert_eq!(ranked, expected, "batch {batch}");
        }
        let tie = expected.iter().position(|(_, at)| *at == 10).unwrap();
        assert_eq!(expected[tie + 1].1, 11, "a tie keeps the order given");
    }

    #[test]
    fn stored_bytes_round_trip_and_a_wrong_length_is_refused() {
        let v = vec![0.5, -1.25, 3.0];
        assert_eq!(from_bytes(&to_bytes(&v), 3).unwrap(), v);
        assert!(from_bytes(&to_bytes(&v), 4).unwrap_err().contains("12 bytes"));
        assert!(from_bytes(&[0, 1, 2], 1).is_err());
    }
}
