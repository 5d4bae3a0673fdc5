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

/// The best score of `vectors` against `query` (an item scores as its best-matching text).
pub(crate) fn best<'v>(query: &[f32], vectors: impl IntoIterator<Item = &'v Vec<f32>>) -> Option<f32> {
    vectors.into_iter().map(|v| dot(query, v)).reduce(f32::max)
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

/// Orders `candidates` (score, position) best first, ties in position order, lazily: only as
/// many are sorted as are taken, in batches, so that a search wanting ten results out of a
/// hundred thousand sorts a few dozen.
pub(crate) struct BestFirst {
    candidates: Vec<(f32, usize)>,
    /// `candidates[..sorted]` are in order, and better than every later one.
    sorted: usize,
    next: usize,
    batch: usize,
}

impl BestFirst {
    /// `candidates` to be taken best first, sorting `batch` more at a time.
    pub(crate) fn new(candidates: Vec<(f32, usize)>, batch: usize) -> Self {
        Self { candidates, sorted: 0, next: 0, batch: batch.max(1) }
    }

    fn order(a: &(f32, usize), b: &(f32, usize)) -> std::cmp::Ordering {
        b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
    }
}

impl Iterator for BestFirst {
    type Item = (f32, usize);

    fn next(&mut self) -> Option<Self::Item> {
        if self.next == self.sorted {
            let rest = &mut self.candidates[self.sorted..];
            if rest.is_empty() {
                return None;
            }
            let take = self.batch.min(rest.len());
            if take < rest.len() {
                rest.select_nth_unstable_by(take - 1, Self::order);
            }
            rest[..take].sort_unstable_by(Self::order);
            self.sorted += take;
            // Each batch doubles, so a search that reads far down the ranking sorts
            // O(n log n) in all.
            self.batch = self.batch.saturating_mul(2);
        }
        let found = self.candidates[self.next];
        self.next += 1;
        Some(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_vectors_score_their_cosine() {
        let mut a = vec![3.0, 4.0];
        normalize(&mut a);
        assert!((a[0] - 0.6).abs() < 1e-6 && (a[1] - 0.8).abs() < 1e-6);
        let mut zero = vec![0.0; 3];
        normalize(&mut zero);
        assert_eq!(zero, [0.0; 3]);
        let long: Vec<f32> = (0..37_u16).map(f32::from).collect();
        let expected: f32 = long.iter().map(|x| x * x).sum();
        assert!((dot(&long, &long) - expected).abs() < 1e-2, "the tail past the last whole chunk counts");
        assert_eq!(best(&[1.0, 0.0], [&vec![0.2, 0.9], &vec![0.7, 0.1]]), Some(0.7));
        assert_eq!(best(&[1.0], std::iter::empty()), None);
    }

    #[test]
    fn stored_bytes_round_trip_and_a_wrong_length_is_refused() {
        let v = vec![0.5, -1.25, 3.0];
        assert_eq!(from_bytes(&to_bytes(&v), 3).unwrap(), v);
        assert!(from_bytes(&to_bytes(&v), 4).unwrap_err().contains("12 bytes"));
        assert!(from_bytes(&[0, 1, 2], 1).is_err());
    }

    #[test]
    fn best_first_gives_every_candidate_in_order_ties_by_position() {
        let scores = [0.1, 0.9, 0.5, 0.9, -0.3, 0.5, 0.7];
        let candidates: Vec<(f32, usize)> = scores.iter().copied().zip(0..).collect();
        for batch in [1, 2, 3, 100] {
            let order: Vec<usize> = BestFirst::new(candidates.clone(), batch).map(|(_, at)| at).collect();
            assert_eq!(order, [1, 3, 6, 2, 5, 0, 4], "batch {batch}");
        }
    }
}
