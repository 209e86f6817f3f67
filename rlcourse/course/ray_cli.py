"""Ray's own `ray` command line minus `ray serve`: `python -m rlcourse.course.ray_cli start ...`.

LocalCluster starts each node with `ray start --block`, and that process lives as long as the node.
Ray's CLI registers `ray serve ...` whenever Ray Serve is installed (lesson 08 needs it), and that
import loads Ray Serve and pandas, which costs memory in every node's `ray start` process and time
at each start. Starting a node needs none of it, so this entry point hides
`ray.serve.scripts` (Ray's CLI then skips the group, as when Serve is missing) and runs the same
`ray` main function; every other command and option is Ray's.
"""

import sys

if __name__ == "__main__":
    sys.modules["ray.serve.scripts"] = None  # `import` of it raises ImportError, which Ray's CLI catches

    from ray.scripts.scripts import main

    main()
