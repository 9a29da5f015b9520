"""``python -m envsynth.cli``."""

from envsynth.cli import main

main()
