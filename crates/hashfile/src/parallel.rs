//! Data parallelism for builds: rayon's iterators with the `parallel`
//! feature, and the same names over std's serial iterators without it, so
//! build code is written once. Results never depend on the thread count
//! (every parallel step in the crate is written to give the same bytes).

#[cfg(feature = "parallel")]
pub(crate) use rayon::prelude::*;

/// Threads a parallel step runs on: the current rayon pool's, or 1.
#[cfg(feature = "parallel")]
pub(crate) fn threads() -> usize {
    rayon::current_num_threads()
}

#[cfg(not(feature = "parallel"))]
pub(crate) use serial::*;

/// Threads a parallel step runs on: the current rayon pool's, or 1.
#[cfg(not(feature = "parallel"))]
pub(crate) fn threads() -> usize {
    1
}

#[cfg(not(feature = "parallel"))]
mod serial {
    //! rayon's method names on std's serial iterators.

    pub(crate) trait IntoParallelIterator: IntoIterator + Sized {
        fn into_par_iter(self) -> Self::IntoIter {
            self.into_iter()
        }
    }
    impl<T: IntoIterator> IntoParallelIterator for T {}

    pub(crate) trait ParallelSlice<T> {
        fn par_iter(&self) -> std::slice::Iter<'_, T>;
    }
    impl<T> ParallelSlice<T> for [T] {
        fn par_iter(&self) -> std::slice::Iter<'_, T> {
            self.iter()
        }
    }

    pub(crate) trait ParallelSliceMut<T> {
        fn par_iter_mut(&mut self) -> std::slice::IterMut<'_, T>;
        fn par_chunks_mut(&mut self, size: usize) -> std::slice::ChunksMut<'_, T>;
        fn par_sort_unstable(&mut self)
        where
            T: Ord;
    }
    impl<T> ParallelSliceMut<T> for [T] {
        fn par_iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
            self.iter_mut()
        }
        fn par_chunks_mut(&mut self, size: usize) -> std::slice::ChunksMut<'_, T> {
            self.chunks_mut(size)
        }
        fn par_sort_unstable(&mut self)
        where
            T: Ord,
        {
            self.sort_unstable()
        }
    }
}
