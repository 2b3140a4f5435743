"""What runs on a node itself: the per-node wrapper, the node's preflight checks, the environment they merge.

Standard library only, and importing only each other: under launchers slurm and ssh these files run as scripts in
the cluster's Python, as siblings (``python node_wrapper.py``), before anything else could be installed there.
"""
