"""Every diagram helper draws without error and returns its figure when not shown."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rlcourse.course import diagrams  # noqa: E402


@pytest.mark.parametrize("draw", [diagrams.rl_loop, diagrams.discounting, diagrams.episode_chunk,
                                  diagrams.clipped_objective, diagrams.data_walk,
                                  diagrams.impala_pipeline])
def test_a_diagram_returns_its_figure(draw):
    figure = draw(show=False)
    assert isinstance(figure, Figure) and figure.axes
    plt.close(figure)


@pytest.mark.parametrize("ending", ["terminated", "truncated", "cut"])
def test_the_episode_chunk_names_each_ending(ending):
    figure = diagrams.episode_chunk(n=3, ending=ending, show=False)
    texts = " ".join(t.get_text() for t in figure.axes[0].texts)
    assert ending in texts and "4 observations" in texts
    plt.close(figure)
