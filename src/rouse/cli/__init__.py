"""The command line: a quick path for the pack, argparse for everything else."""
