//! A fixed set of equal rows, each starting on a 64-byte boundary (a cache line and an AVX-512
//! vector: split loads halve the kernels' speed, see EVIDENCE.md).
//!
//! Rows are `stride` bytes apart, `stride` being the row length rounded up to 64. The padding
//! after each row starts zeroed and stays zero: every operation the codecs apply to whole
//! strides is a linear combination, which keeps zeros zero.

use crate::kernels::Src;

/// The alignment every row starts on.
pub(crate) const ALIGN: usize = 64;

/// How many output rows [`Rows::with_padded_mut_at`] lists without allocating: two kernel
/// passes, and the lost symbols of the usual generation.
pub(crate) const OUTPUTS_ON_STACK: usize = 16;

/// Hands `f` the items of `items` as a slice, on the stack when there are fewer than `N` of
/// them: the per-symbol paths list rows this way without a heap allocation (a small array
/// costs less to fill than an allocation).
pub(crate) fn on_stack<const N: usize, R: Default, T>(
    items: impl IntoIterator<Item = R>,
    f: impl FnOnce(&mut [R]) -> T,
) -> T {
    let mut items = items.into_iter();
    let mut array: [R; N] = std::array::from_fn(|_| R::default());
    let mut len = 0;
    for (slot, item) in array.iter_mut().zip(items.by_ref()) {
        *slot = item;
        len += 1;
    }
    if len < N {
        return f(&mut array[..len]);
    }
    let mut all: Vec<R> = array.into_iter().chain(items).collect();
    f(&mut all)
}

#[derive(Clone, Debug)]
pub(crate) struct Rows {
    buf: Vec<u8>,
    start: usize,
    stride: usize,
    len: usize,
    count: usize,
}

impl Rows {
    /// `count` zeroed rows of `len` bytes.
    pub(crate) fn new(count: usize, len: usize) -> Rows {
        let stride = len.div_ceil(ALIGN) * ALIGN;
        // Over-allocate by one alignment and start at the first aligned byte; the buffer is
        // never resized, so the start stays aligned.
        let buf = vec![0u8; stride * count + ALIGN];
        let start = buf.as_ptr().align_offset(ALIGN);
        debug_assert!(start < ALIGN);
        Rows {
            buf,
            start,
            stride,
            len,
            count,
        }
    }

    /// How many rows there are.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Row `i` (its `len` bytes).
    pub(crate) fn row(&self, i: usize) -> &[u8] {
        let s = self.start + i * self.stride;
        &self.buf[s..s + self.len]
    }

    /// Row `i`, mutable.
    pub(crate) fn row_mut(&mut self, i: usize) -> &mut [u8] {
        let s = self.start + i * self.stride;
        &mut self.buf[s..s + self.len]
    }

    /// Rows `0..count` as kernel input: their `len` bytes, or whole strides with `padded`.
    pub(crate) fn src(&self, count: usize, padded: bool) -> Src<'_> {
        assert!(count <= self.count);
        Src::Strided {
            buf: &self.buf[self.start..self.start + count * self.stride],
            stride: self.stride,
            len: if padded { self.stride } else { self.len },
            count,
        }
    }

    /// Hands `f` the rows at `picks` (strictly increasing) with their padding, mutable; fewer
    /// than [`OUTPUTS_ON_STACK`] of them without allocating.
    pub(crate) fn with_padded_mut_at<T>(
        &mut self,
        picks: impl IntoIterator<Item = usize>,
        f: impl FnOnce(&mut [&mut [u8]]) -> T,
    ) -> T {
        let mut rows = self.buf[self.start..self.start + self.count * self.stride]
            .chunks_exact_mut(self.stride)
            .enumerate();
        let picked = picks.into_iter().map(|p| {
            rows.by_ref()
                .find_map(|(i, r)| (i == p).then_some(r))
                .expect("picks are strictly increasing row indices")
        });
        on_stack::<OUTPUTS_ON_STACK, _, _>(picked, f)
    }

    /// Zeroes every row (and its padding).
    pub(crate) fn clear(&mut self) {
        self.buf.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_aligned_and_disjoint() {
        let mut r = Rows::new(5, 100);
        for i in 0..5 {
            assert_eq!(r.row(i).as_ptr() as usize % ALIGN, 0);
            r.row_mut(i).fill(i as u8 + 1);
        }
        for i in 0..5 {
            assert!(r.row(i).iter().all(|&b| b == i as u8 + 1));
        }
        let Src::Strided {
            buf,
            stride,
            len,
            count,
        } = r.src(5, true)
        else {
            panic!("rows are strided");
        };
        assert_eq!((stride, len, count, buf.len()), (128, 128, 5, 640));
        assert!(
            buf.chunks(128)
                .all(|row| row[100..].iter().all(|&b| b == 0))
        );
        let (count, first) = r.with_padded_mut_at([1, 3], |picked| (picked.len(), picked[1][0]));
        assert_eq!((count, first), (2, 4));
        let more = OUTPUTS_ON_STACK + 3;
        let many = Rows::new(more, 8).with_padded_mut_at(1..more, |p| p.len());
        assert_eq!(many, more - 1);
    }
}
