"""envsynth: executable, verifiable tool-use environments and tasks for training LLM agents."""

__version__ = "0.1.0"

