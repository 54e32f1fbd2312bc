"""The command line: a quick parse for pack, status and due, argparse for everything else."""
