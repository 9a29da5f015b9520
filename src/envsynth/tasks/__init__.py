"""Task synthesis by stage: planning (seed chains), building (initial states with distractors), wording (instructions), admission."""

from envsynth.tasks.episode import TaskEpisode
from envsynth.tasks.model import Call, Coordinates, Ref, Rejection, RejectionReason, Task, TaskState, UserProfile
from envsynth.tasks.state import state_bytes
from envsynth.tasks.synth import admit, synthesize
from envsynth.tasks.trainer import Action, EpisodeState, StepResult

__all__ = [
    "Action",
    "Call",
    "Coordinates",
    "EpisodeState",
    "Ref",
    "Rejection",
    "RejectionReason",
    "StepResult",
    "Task",
    "TaskEpisode",
    "TaskState",
    "UserProfile",
    "admit",
    "state_bytes",
    "synthesize",
]
