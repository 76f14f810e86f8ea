from __future__ import annotations

from collections.abc import Iterator

import pytest

from trusteval.util.lazyseq import LazySequence


class Squares(LazySequence[int]):
    """Counts its passes, so a test can see that nothing is held between them."""

    def __init__(self, size: int) -> None:
        self.size, self.passes = size, 0

    def __iter__(self) -> Iterator[int]:
        self.passes += 1
        return (i * i for i in range(self.size))

    def __len__(self) -> int:
        return self.size


def test_indexing_walks_a_fresh_pass_each_time() -> None:
    squares = Squares(5)
    assert (squares[0], squares[3], squares[-1], squares[-5]) == (0, 9, 16, 0)
    assert squares[1:4] == [1, 4, 9] and squares[::-2] == [16, 4, 0]
    assert list(squares) == list(squares) == [0, 1, 4, 9, 16]
    assert squares.passes == 8
    assert 9 in squares and squares.index(16) == 4 and list(reversed(squares)) == [16, 9, 4, 1, 0]


@pytest.mark.parametrize("index", [5, -6, 100])
def test_an_index_out_of_range_is_an_index_error(index: int) -> None:
    with pytest.raises(IndexError):
        Squares(5)[index]
