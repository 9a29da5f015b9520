"""One root for every error envsynth raises: :class:`EnvsynthError`, with a class per boundary.

Catch :class:`EnvsynthError` to catch whatever envsynth raises on purpose (the ``envsynth``
command does, and prints it on one line); anything else that escapes is a bug. Each
boundary has its own class, defined next to the code that raises it:

======================  =========================================================================
boundary                class (module)
======================  =========================================================================
configuration           :class:`ConfigError` (here): an option out of range or that does not fit
blueprint               ``BlueprintError`` (``blueprint.errors``)
condition language      ``ExprError`` (``blueprint.expr``)
compile and test        ``BuildError``, ``FolderInUseError`` (``compiler.build``)
fixture solver          ``Unsolvable`` (``testing.fixtures``)
app                     ``AppLoadError`` (``runtime.app``), ``ToolError`` (``runtime.toolkit``)
tasks                   ``ChainFailed`` (``tasks.building.instantiate``)
corpus                  ``CorpusError`` (``corpus.errors``)
run                     ``RunError`` (``rollout.batch``), ``OracleError`` (``agents.oracle``)
sandbox                 :class:`SandboxError` (here) and its kinds in ``sandbox.launcher`` and
                        ``sandbox.untrusted``
LLM client              ``LLMError`` (``llm.types``), ``ScriptedHTTPError`` (``llm.mock``)
LLM builder             :class:`LLMBuildError` (here) and its kinds in ``llmbuild.client`` and
                        ``llmbuild.prompts``
serve                   ``ServeError`` (``serve.registry``)
export                  ``ExportError`` (``export.write``), ``MalformedMessage`` (``export.messages``)
plan, audit, report     ``PlanError`` (``plan.fit``), ``AuditError`` (``audit.audit``),
                        ``ReportError`` (``view.html.build``)
======================  =========================================================================

Classes that were a ``ValueError``, ``RuntimeError`` or ``KeyError`` before the root existed
keep that as a second base, so code that caught them that way still does. The two scripts
that run inside the sandbox (``sandbox.worker``, ``sandbox.tool_worker``) import nothing of
envsynth and define their own exceptions, which never leave the sandboxed process.
"""

from __future__ import annotations


class EnvsynthError(Exception):
    """The root of every error envsynth raises on purpose."""


class ConfigError(EnvsynthError, ValueError):
    """An option out of range, unknown, or that does not go with another.

    Attributes:
        option: the name of the option (a parameter of the function that raised), so that
            a front end can name it its own way (the command line as ``--option``); empty
            when the problem is not one option's.
    """

    def __init__(self, message: str, option: str = "") -> None:
        super().__init__(message)
        self.option = option


class SandboxError(EnvsynthError, RuntimeError):
    """The sandbox could not be started, or its worker died or ran out of time."""


class LLMBuildError(EnvsynthError):
    """The LLM builder could not go on (a stop, a role's failure, a prompt template's problem)."""
