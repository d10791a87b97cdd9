"""Exception classes of jevgate: one base class and one subclass per family.

Every exception carries the library's stable ``code`` (one of ``jevgate.codes``, the same string
C hosts read with ``jevgate_error_code``), the ``http_status`` a host serving the documented HTTP
contracts should answer with, ``retry_after`` (seconds, or ``None``) when a provider asked to
wait, ``retryable`` (the same call may succeed later) and ``worker_code`` (the seed's lower-case
worker code a device result carries, e.g. ``tab_unavailable``, or ``None``).
Messages never contain credentials, submitted state or page text.
"""

from __future__ import annotations

from typing import Optional


class Error(Exception):
    """Base class of every jevgate error."""

    code: str
    http_status: int
    retry_after: Optional[float]
    retryable: bool
    worker_code: Optional[str]

    def __init__(
        self,
        message: str,
        *,
        code: str = "INTERNAL",
        http_status: int = 500,
        retry_after: Optional[float] = None,
        retryable: bool = False,
        worker_code: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status
        self.retry_after = retry_after
        self.retryable = retryable
        self.worker_code = worker_code


class ConfigError(Error, ValueError):
    """A configuration was rejected (``JEV_INVALID_CONFIGURATION``) or a credential it names
    cannot be resolved (``JEV_MISSING_CREDENTIALS``). ``path`` is the JSON path of the first
    offending value (``"gateway.jev.apiKeyEnv"``; ``""`` for the document itself), or ``None``.
    """

    path: Optional[str]

    def __init__(self, message: str, *, path: Optional[str] = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(message, **kwargs)
        self.path = path


class StoreError(Error):
    """The store could not be opened or used: ``STORE_CORRUPT``, ``STORE_VERSION_UNSUPPORTED``,
    ``STORE_LOCKED`` (another gateway holds the data directory), ``STORE_IO``,
    ``STORE_UNAVAILABLE`` (503, retryable: the shared PostgreSQL store cannot be reached)."""


class ArgumentError(Error, ValueError):
    """An argument was malformed (``INVALID_ARGUMENT``, 400): the same code C reports for the
    same wrong value (an unknown format or mode, JSON of the wrong shape, a negative duration)."""


class GatewayError(Error):
    """The gateway is not in a state that allows the call (``GATEWAY_CLOSED``)."""


class LeaseError(Error):
    """A device control lease or browser session lease refused the call:
    ``DEVICE_CONTROL_ELSEWHERE`` (another conversation drives the device; names nobody),
    ``DEVICE_CONTROL_REVOKED`` (a person took control back; told once — do not retry unless
    asked), ``DEVICE_CONTROL_NOT_HELD``, ``BROWSER_CONTEXT_BUSY`` (``isolated_available`` says
    whether the call may be retried in isolated mode — the seed's ``isolatedAvailable``),
    ``BROWSER_AUTHENTICATED_UNAVAILABLE``. All 409 except the last (403).
    ``isolated_available`` is ``None`` for every code but ``BROWSER_CONTEXT_BUSY``."""

    isolated_available: Optional[bool]

    def __init__(self, message: str, *, isolated_available: Optional[bool] = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(message, **kwargs)
        self.isolated_available = isolated_available


class AccessDeniedError(Error, PermissionError):
    """The caller may not do this (``ACCESS_DENIED``, 403): e.g. a control route called by
    someone other than the device's owner, or with a delegated credential; a task id that is
    not the owner's (an unknown id and another owner's task answer alike, word for word).
    ``EXECUTION_DENIED`` (403): the task's agent has no Jev access (not in
    ``allowedAgentIds``, or its own ``jev.enabled`` is false), so it may not run browser
    tasks. ``BROWSER_EVIDENCE_UNAVAILABLE`` (403): an evidence read (``gw.tasks.evidence``)
    failed any access or ownership check — an unknown id answers alike, word for word."""


class GrammarError(Error, ValueError):
    """The step-command grammar refused an input: ``NAVIGATION_UNRESOLVED`` for a
    model-produced address that is not a plain http(s) URL or domain (credentials, IP literal,
    localhost, single-label host, other schemes)."""


class JevError(Error):
    """A Jev evaluation failed: ``JEV_INVALID_REQUEST`` (with ``.path``), provider and limit
    failures (``JEV_TIMEOUT``, ``JEV_RATE_LIMITED`` with ``.retry_after``, …)."""

    path: Optional[str]

    def __init__(self, message: str, *, path: Optional[str] = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(message, **kwargs)
        self.path = path


class ValidationError(JevError, ValueError):
    """A provider response failed validation (``JEV_MALFORMED_RESPONSE``). ``reason`` is one
    fixed code: ``MISSING_ANSWER``, ``UNEXPECTED_ANSWER``, ``TYPE_MISMATCH``,
    ``PROBABILITY_RANGE``, ``UNKNOWN_OPTION``, ``MISSING_OPTION``, ``CHOICE_NOT_MAX``,
    ``DISTRIBUTION_SUM``, ``LEVEL_COUNT``, ``SCORE_MISMATCH``, ``USAGE_INVALID``,
    ``MALFORMED_JSON``, ``MISSING_FIELD``, ``UNEXPECTED_FIELD``, ``INVALID_FIELD``. The answer
    itself is never included."""

    reason: str

    def __init__(self, message: str, *, reason: str = "", **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(message, **kwargs)
        self.reason = reason


class DeviceError(Error):
    """A paired browser device cannot be used: ``DEVICE_NOT_PAIRED``,
    ``DEVICE_SELECTION_REQUIRED``, ``DEVICE_OFFLINE``, ``DEVICE_CAPABILITY_MISMATCH``,
    ``UNKNOWN_TOOL``, ``INVALID_TOOL_ARGUMENTS``, ``ARTIFACT_NOT_FOUND``."""


class BrowserError(Error):
    """The browser refused or failed an action: ``BROWSER_UNAVAILABLE``, ``STALE_OBSERVATION``
    (cause ``NAVIGATION_PENDING``, ``GENERATION_CHANGED`` or ``TARGET_OBSCURED``),
    ``HISTORY_UNAVAILABLE``, ``SCROLL_LIMIT``, ``FOCUS_REQUIRED``, ``DIALOG_OPEN``, ``TAB_LIMIT``
    (409; the session's tab cap, popups included: close a tab first), …, and
    ``OUTCOME_UNKNOWN`` (the command was sent and no result came back: it may have run and is
    never sent again), ``BROWSER_INSPECTION_UNAVAILABLE`` (503; fresh evidence cannot inspect
    the task's browser now: its local browser is gone, a request runs on it, or the device is
    offline or its tab leased — recorded evidence still answers)."""


class TaskError(Error):
    """A browser task refused the call: ``AUTOMATION_SESSION_CLOSED`` (410; the task's session
    is over: no more commands), ``COMMAND_QUEUE_FULL`` (429, retryable; 20 commands already
    wait behind the running one), ``ORCHESTRATION_DISABLED`` (409; the configuration does not
    enable Jev and ``features.browserTasks``: nothing was opened or sent),
    ``AUTOMATION_SESSION_EXISTS`` (409; the principal or the gateway holds as many open
    sessions as allowed), ``TASK_QUEUE_FULL`` (429, retryable; as many spawns as allowed wait
    for a slot), ``REVISION_CONFLICT``, ``STATE_CONFLICT``, ``IDEMPOTENCY_CONFLICT``,
    ``NOTHING_TO_RESUME`` (409; the control route), ``INVALID_CONTRACT`` (502; a host verifier
    answered something other than a bool: a candidate's reason, never read as False),
    ``READ_REQUEST_ONLY`` (409; the agent's turn for the person's read request is read-only),
    ``AGENT_HANDOFF_ONE_COMMAND`` / ``AGENT_HANDOFF_USED`` (409; a handed-off command takes one
    ``task_update`` from the agent, once)."""


class ToolError(Exception):
    """Raised by a ``jevgate.DeviceWorker`` executor to fail one command with a worker code
    (``cancelled``, ``timed_out``, ``execution_failed``, ``tab_unavailable``,
    ``debugger_unavailable``, ``blocked_by_user``, ``javascript_error``, ``batch_cap_exceeded``;
    others become ``execution_failed``). The message reaches the agent's model (at most 500
    characters): keep page content and secrets out of it."""

    code: str
    message: str

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
