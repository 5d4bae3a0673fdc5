//! Every vector of a store side by side in memory, and the exact ranking of items over them.
//!
//! Scoring reads every vector under the searched prefix. Kept one allocation per vector, that
//! read waits on memory once per pointer (tens of milliseconds for 100,000 vectors); kept side
//! by side, the processor streams them. Each vector is held twice: its numbers, and an 8-bit
//! copy a quarter the size that the scan reads. Scores from the copy are off by at most a bound
//! known for each vector, so the ranking uses them only to rule out what cannot be among the
//! best, and scores what can in full: the order and the scores it gives are the exact ones.

use super::vector::{bound, dot, dot_codes, quantize};
use std::collections::VecDeque;

/// Where an item's vectors lie in an [`Arena`]: `len` slots from `start`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// Whether the item has no vectors.
    pub(crate) fn is_empty(self) -> bool {
        self.len == 0
    }

    fn slots(self) -> std::ops::Range<usize> {
        let start = self.start as usize;
        start..start + self.len as usize
    }
}

/// Unit vectors of one length, appended side by side; a vector replaced or deleted leaves a
/// gap until [`compact`](Arena::compact) closes the gaps.
#[derive(Debug, Default)]
pub(crate) struct Arena {
    dims: usize,
    exact: Vec<f32>,
    codes: Vec<i8>,
    /// Per slot: what one step of its codes is worth, and how far its copy is from it.
    scales: Vec<f32>,
    errors: Vec<f32>,
    /// Slots held by items (the rest are gaps).
    used: usize,
}

impl Arena {
    /// An empty arena of vectors of `dims` numbers.
    pub(crate) fn new(dims: usize) -> Self {
        Self { dims, ..Self::default() }
    }

    fn slots(&self) -> usize {
        self.scales.len()
    }

    /// Appends an item's vectors (each `dims` long, unit or zero); where they lie.
    pub(crate) fn push(&mut self, vectors: &[Vec<f32>]) -> Span {
        let start = u32::try_from(self.slots()).unwrap_or(u32::MAX);
        for vector in vectors {
            debug_assert_eq!(vector.len(), self.dims);
            let (codes, scale, error) = quantize(vector);
            self.exact.extend_from_slice(vector);
            self.codes.extend_from_slice(&codes);
            self.scales.push(scale);
            self.errors.push(error);
        }
        self.used += vectors.len();
        Span { start, len: u32::try_from(vectors.len()).unwrap_or(u32::MAX) }
    }

    /// Leaves the slots of `span` as a gap.
    pub(crate) fn free(&mut self, span: Span) {
        self.used -= span.len as usize;
    }

    /// Whether gaps take more room than vectors do (and are worth closing).
    pub(crate) fn wasteful(&self) -> bool {
        self.slots() > 2 * self.used + 1024
    }

    /// Closes the gaps: the vectors of `spans` (every item's) are moved together, and each span
    /// updated to where its vectors now lie.
    pub(crate) fn compact<'s>(&mut self, spans: impl Iterator<Item = &'s mut Span>) {
        let mut next = Self::new(self.dims);
        for span in spans {
            let start = u32::try_from(next.slots()).unwrap_or(u32::MAX);
            for slot in span.slots() {
                next.exact.extend_from_slice(&self.exact[slot * self.dims..(slot + 1) * self.dims]);
                next.codes.extend_from_slice(&self.codes[slot * self.dims..(slot + 1) * self.dims]);
                next.scales.push(self.scales[slot]);
                next.errors.push(self.errors[slot]);
            }
            next.used += span.len as usize;
            span.start = start;
        }
        *self = next;
    }

    /// The exact score of `query` against the item at `span`: its best-matching vector's.
    fn best(&self, query: &[f32], span: Span) -> f32 {
        span.slots()
            .map(|slot| dot(query, &self.exact[slot * self.dims..(slot + 1) * self.dims]))
            .fold(f32::NEG_INFINITY, f32::max)
    }

    /// The lowest and highest score `query` can have against the vector in `slot`, from the
    /// 8-bit copies.
    fn bounds(&self, query: &Query, slot: usize) -> (f32, f32) {
        let codes = &self.codes[slot * self.dims..(slot + 1) * self.dims];
        #[allow(clippy::cast_precision_loss, reason = "at most dims × 127² in magnitude: exact in an f32")]
        let approx = self.scales[slot] * query.scale * dot_codes(codes, &query.codes) as f32;
        let off = bound(self.errors[slot], query.error);
        (approx - off, approx + off)
    }
}

impl Arena {
    /// Each item's lowest and highest possible score against `query` (its best vector's), the
    /// items shared among the machine's cores when there are enough of them to be worth a thread
    /// each. Items come in the order of their keys, which is the arena's order once it has been
    /// compacted, so each thread reads the arena mostly in order.
    fn item_bounds(&self, query: &Query, spans: &[Span]) -> Vec<(f32, f32)> {
        let one = |span: &Span| {
            span.slots().fold((f32::NEG_INFINITY, f32::NEG_INFINITY), |(low, high), slot| {
                let (l, h) = self.bounds(query, slot);
                (low.max(l), high.max(h))
            })
        };
        let threads = std::thread::available_parallelism().map_or(1, usize::from).min(spans.len() / PER_THREAD).max(1);
        if threads == 1 {
            return spans.iter().map(one).collect();
        }
        let share = spans.len().div_ceil(threads);
        let mut all = vec![(0.0, 0.0); spans.len()];
        std::thread::scope(|scope| {
            for (part, out) in spans.chunks(share).zip(all.chunks_mut(share)) {
                scope.spawn(move || {
                    for (span, bounds) in part.iter().zip(out) {
                        *bounds = one(span);
                    }
                });
            }
        });
        all
    }
}

/// The fewest items that a thread of its own is given to scan: starting a thread costs about
/// as much as scanning a few thousand.
const PER_THREAD: usize = 16_384;

/// A query vector and its 8-bit copy.
struct Query {
    exact: Vec<f32>,
    codes: Vec<i8>,
    scale: f32,
    error: f32,
}

/// Items (each a [`Span`] of an [`Arena`]) in order of their exact score against a query, best
/// first, ties in the order given; an item without vectors is never given. Lazy: it gives the
/// best `batch` items, then the next twice as many, and so on, each batch scored in full only
/// where the 8-bit bounds cannot rule an item out, so a search wanting ten results out of a
/// hundred thousand scores a few dozen in full.
pub(crate) struct Ranking<'a> {
    arena: &'a Arena,
    query: Query,
    spans: Vec<Span>,
    /// Each item's lowest and highest possible score.
    bounds: Vec<(f32, f32)>,
    /// The items not given yet.
    left: Vec<usize>,
    ready: VecDeque<(f32, usize)>,
    batch: usize,
}

impl<'a> Ranking<'a> {
    /// Ranks the items at `spans` of `arena` against `query` (a unit vector of the arena's
    /// length), `batch` at a time to begin with.
    pub(crate) fn new(arena: &'a Arena, query: Vec<f32>, spans: Vec<Span>, batch: usize) -> Self {
        let (codes, scale, error) = quantize(&query);
        let query = Query { exact: query, codes, scale, error };
        let bounds = arena.item_bounds(&query, &spans);
        let left = (0..spans.len()).filter(|&at| !spans[at].is_empty()).collect();
        Self { arena, query, spans, bounds, left, ready: VecDeque::new(), batch: batch.max(1) }
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
            .map(|&at| (self.arena.best(&self.query.exact, self.spans[at]), at))
            .collect();
        scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(m);
        let mut taken = vec![false; self.spans.len()];
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
    use super::super::vector::tests::random;
    use super::*;

    #[test]
    fn bounds_worked_out_on_several_threads_are_those_of_one() {
        let mut arena = Arena::new(8);
        let vectors = random(3 * PER_THREAD + 5, 8, 11);
        let spans: Vec<Span> = vectors.chunks(2).map(|pair| arena.push(pair)).collect();
        let query = random(1, 8, 12).remove(0);
        let (codes, scale, error) = quantize(&query);
        let query = Query { exact: query, codes, scale, error };
        let threaded = arena.item_bounds(&query, &spans);
        let one: Vec<(f32, f32)> = arena.item_bounds(&query, &spans[..PER_THREAD]);
        assert_eq!(threaded[..PER_THREAD], one[..], "a small list is worked out on one thread");
        let by_hand: Vec<(f32, f32)> = spans
            .iter()
            .map(|span| {
                let (a, b) = (arena.bounds(&query, span.slots().start), arena.bounds(&query, span.slots().end - 1));
                (a.0.max(b.0), a.1.max(b.1))
            })
            .collect();
        assert_eq!(threaded, by_hand);
    }

    #[test]
    fn the_ranking_is_the_exact_order_whatever_the_batch_and_the_gaps() {
        let vectors = random(500, 64, 7);
        let mut arena = Arena::new(64);
        // Gaps first: items replaced and deleted leave slots that nothing ranks.
        let gone = arena.push(&vectors[..50]);
        arena.free(gone);
        let mut spans: Vec<Span> = (0..300).map(|at| arena.push(&vectors[at..=at])).collect();
        // Item 3 has two texts; item 5 none; items 10 and 11 the same vector (a tie).
        arena.free(spans[3]);
        spans[3] = arena.push(&[vectors[3].clone(), vectors[400].clone()]);
        arena.free(spans[5]);
        spans[5] = Span::default();
        arena.free(spans[11]);
        spans[11] = arena.push(&vectors[10..=10]);
        let query = random(1, 64, 9).remove(0);
        let score = |at: usize| -> Option<f32> {
            let texts: Vec<&Vec<f32>> = match at {
                3 => vec![&vectors[3], &vectors[400]],
                5 => vec![],
                11 => vec![&vectors[10]],
                _ => vec![&vectors[at]],
            };
            texts.into_iter().map(|v| dot(&query, v)).reduce(f32::max)
        };
        let mut expected: Vec<(f32, usize)> = (0..300).filter_map(|at| Some((score(at)?, at))).collect();
        expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for batch in [1, 3, 10, 1000] {
            let ranked: Vec<(f32, usize)> = Ranking::new(&arena, query.clone(), spans.clone(), batch).collect();
            assert_eq!(ranked, expected, "batch {batch}");
        }
        // A few items of a large arena: each item's slots are read where they lie.
        let few: Vec<(f32, usize)> = Ranking::new(&arena, query.clone(), spans[..20].to_vec(), 5).collect();
        let mut expected_few: Vec<(f32, usize)> = expected.iter().copied().filter(|(_, at)| *at < 20).collect();
        expected_few.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        assert_eq!(few, expected_few);
        let tie = expected.iter().position(|(_, at)| *at == 10).unwrap();
        assert_eq!(expected[tie + 1].1, 11, "a tie keeps the order given");

        assert!(arena.wasteful() || arena.slots() < 1024 + 2 * arena.used);
        let before: Vec<(f32, usize)> = Ranking::new(&arena, query.clone(), spans.clone(), 4).collect();
        arena.compact(spans.iter_mut());
        assert_eq!(arena.slots(), arena.used, "no gaps are left");
        let after: Vec<(f32, usize)> = Ranking::new(&arena, query, spans, 4).collect();
        assert_eq!(after, before, "compacting moves vectors, never changes them");
    }
}
