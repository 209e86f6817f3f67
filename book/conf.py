"""Sphinx settings of the course's book (`make book`; rlcourse/course/book.py stages the sources).

The notebooks come executed from the lessons' run under nbval: MyST-NB never runs them again.
"""

project = "rlcourse"
author = "rlcourse"
extensions = ["myst_nb", "sphinx-mathjax-offline"]  # MathJax from its wheel, not a CDN
exclude_patterns = ["**.ipynb_checkpoints"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# Not the build's business: a lesson's heading levels, and an output with no mime type the book can
# show (text/plain comes with nearly every output; images are counted by the browser test).
suppress_warnings = ["myst.header", "mystnb.mime_type"]
nb_execution_mode = "off"
nb_output_stderr = "show"
html_theme = "sphinx_book_theme"
html_title = "rlcourse: distributed RL with Ray"
html_static_path: list[str] = []
html_theme_options = {
    "repository_url": "https://github.com/rlcourse/rlcourse",
    "repository_branch": "HEAD",
    "path_to_docs": "",
    "launch_buttons": {"binderhub_url": "https://mybinder.org", "notebook_interface": "jupyterlab"},
    "use_repository_button": True,
    "show_toc_level": 2,
}
html_context = {"default_mode": "light"}  # unset, the theme logs "invalid theme mode" on a first visit
