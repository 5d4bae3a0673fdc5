//! Boxing a future without making it in the caller's frame: a leaf every layer that runs
//! nested futures (steps, subgraphs, stored calls) shares.

/// Boxes the future `make` makes, making it in a frame of its own.
///
/// `Box::pin(f(..))` makes the future in the caller's stack frame and copies it into the box:
/// the caller's frame then has room for every future it ever boxes, however rarely, and a run's
/// loop (whose frames stack up once per level of subgraphs) would touch several kilobytes of
/// stack per level. Here the rare futures (storing, streaming, failing) take room only when made.
#[inline(never)]
pub(crate) fn boxed<F: Future>(make: impl FnOnce() -> F) -> std::pin::Pin<Box<F>> {
    Box::pin(make())
}
