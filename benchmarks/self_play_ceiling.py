"""How often can any policy beat ConnectFour's `heuristic_action`? The exact ceiling of the self-play
goal (issue 17: >= 80% of games), per board, beside what a perfect minimax player gets.

Two players, each searching every game to its end (memoized; small boards only):
- expectimax: the best policy *against this heuristic*. It knows the heuristic's rule (win, else
  block, else a random column, centre-weighted) and maximizes the probability of winning. Its value
  is exact; the 400 played games check the solver against the real env and heuristic code.
- minimax: a perfect player against a perfect opponent (ties: the quickest win, the latest loss,
  the column nearest the centre). When every move loses against perfect play it has no reason to
  prefer the move the heuristic is likely to get wrong, so it wins less often than expectimax.
Both play as `play_vs_heuristic` measures a trained policy: greedy, on each side half the time, who
starts at random, draws not won.

    python benchmarks/self_play_ceiling.py [--boards 3x4x3 4x4x3 3x5x3] [--games 400]
"""

import argparse
import time
from functools import lru_cache

import numpy as np

from rlcourse.course.multi_agent_envs import wins
from rlcourse.course.self_play import play_vs_heuristic

Board = tuple[int, ...]  # row-major, +1 the player to evaluate for, -1 the other, 0 empty


class Solver:
    """Exact values of positions of a rows x cols board, connect in a row."""

    def __init__(self, rows: int, cols: int, connect: int):
        self.rows, self.cols, self.connect = rows, cols, connect
        self.centre_first = sorted(range(cols), key=lambda c: abs(2 * c - (cols - 1)))
        self.weights = [cols - abs(2 * c - (cols - 1)) for c in range(cols)]  # the heuristic's
        self.expectimax = lru_cache(maxsize=None)(self._expectimax)
        self.negamax = lru_cache(maxsize=None)(self._negamax)

    def drop(self, board: Board, col: int, sign: int) -> tuple[Board, bool] | None:
        """The board after `sign` plays `col` and whether that completes a line; None if full."""
        array = np.array(board, dtype=np.int8).reshape(self.rows, self.cols)
        free = np.flatnonzero(array[:, col] == 0)
        if len(free) == 0:
            return None
        array[free[-1], col] = sign
        return tuple(array.ravel().tolist()), wins(array, free[-1], col, self.connect)

    def legal(self, board: Board) -> list[int]:
        return [c for c in range(self.cols) if board[c] == 0]  # row 0 is the top row

    def _expectimax(self, board: Board, policy_to_move: bool) -> float:
        """P(the policy, +1, wins) with best play against the heuristic, -1."""
        legal = self.legal(board)
        if not legal:
            return 0.0
        if policy_to_move:
            return max(self._after(board, c, 1) for c in legal)
        for sign in (-1, 1):  # the heuristic's rule: its own win first, then a block
            for c in legal:
                if self.drop(board, c, sign)[1]:
                    return self._after(board, c, -1)
        total = sum(self.weights[c] for c in legal)
        return sum(self.weights[c] / total * self._after(board, c, -1) for c in legal)

    def _after(self, board: Board, col: int, sign: int) -> float:
        after, won = self.drop(board, col, sign)
        if won:
            return 1.0 if sign == 1 else 0.0
        return self.expectimax(after, sign == -1)

    def _negamax(self, board: Board) -> tuple[float, int]:
        """(value, best column) for the player to move, +1: 1 - plies/100 for a win, -1 + plies/100
        for a loss (quick wins, late losses), 0 for a draw."""
        best, best_col = -2.0, -1
        for c in [c for c in self.centre_first if board[c] == 0]:
            after, won = self.drop(board, c, 1)
            if won:
                value = 1.0
            elif 0 not in after:
                value = 0.0
            else:
                value = -self.negamax(tuple(-x for x in after))[0]
                value -= 0.01 * np.sign(value)
            if value > best:
                best, best_col = value, c
        return best, best_col

    def expectimax_action(self, obs: np.ndarray) -> int:
        board = tuple(int(x) for x in obs)
        return max(self.legal(board), key=lambda c: self._after(board, c, 1))

    def minimax_action(self, obs: np.ndarray) -> int:
        return self.negamax(tuple(int(x) for x in obs))[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", nargs="+", default=["3x4x3", "4x4x3", "3x5x3"],
                        help="rows x cols x connect (4x5x3 takes about 15 s)")
    parser.add_argument("--games", type=int, default=400)
    args = parser.parse_args()
    print(f"{'board':>10} | {'best (exact)':>12} | {'as 1st':>6} | {'as 2nd':>6} | "
          f"{'best, played':>12} | {'minimax, played':>15} | {'s':>5}")
    for spec in args.boards:
        rows, cols, connect = map(int, spec.split("x"))
        env_config = {"rows": rows, "cols": cols, "connect": connect}
        start = time.perf_counter()
        solver = Solver(rows, cols, connect)
        empty = (0,) * (rows * cols)
        first, second = solver.expectimax(empty, True), solver.expectimax(empty, False)
        played = {name: play_vs_heuristic(
            lambda obs, act=act: np.array([act(o) for o in obs]), env_config, args.games, seed=0)
            for name, act in (("best", solver.expectimax_action),
                              ("minimax", solver.minimax_action))}
        print(f"{spec:>10} | {(first + second) / 2:12.3f} | {first:6.3f} | {second:6.3f} | "
              f"{played['best'].win_rate:12.3f} | {played['minimax'].win_rate:15.3f} | "
              f"{time.perf_counter() - start:5.1f}")
    print(f"(played: {args.games} games each, seed 0; exact values are averages over who starts)")


if __name__ == "__main__":
    main()
