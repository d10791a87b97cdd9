"""Type stubs of the native module jevgate._jevgate (re-exported by the jevgate package).

A wrong argument raises ArgumentError (a ValueError) with code INVALID_ARGUMENT, as C reports it,
including a JSON argument (dict/list) holding a value JSON cannot carry (a set, NaN, a cycle);
an argument of the wrong Python type is a TypeError; a broken invariant inside the binding is
Error with code INTERNAL.
"""

import os
from types import TracebackType
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, Union, final

__version__: str
__all__ = [
    "__version__",
    "validate_config",
    "parse_command",
    "split_steps",
    "split_parts",
    "check_model_address",
    "validate_response",
    "answer_schema",
    "Gateway",
    "ManualClock",
    "Leases",
    "Tasks",
    "BrowserCall",
    "tool_definitions",
    "error_table",
    "managed_tool_definitions",
    "ChannelHandle",
    "Computer",
    "CancelToken",
    "LocalBrowser",
    "DeviceWorker",
]


def validate_config(config: Union[str, Mapping[str, Any]]) -> None:
    """Validate a configuration (a dict or a JSON string); raise ConfigError with .path."""

def validate_response(questions: Union[str, bytes, bytearray, Mapping[str, Any]], response: Union[str, bytes, bytearray, Mapping[str, Any]]) -> Dict[str, Any]:
    """The validated answers dict; ValidationError (.code, .reason) otherwise."""

def answer_schema(questions: Union[str, bytes, bytearray, Mapping[str, Any]]) -> Dict[str, Any]:
    """The JSON Schema of a valid answers object (sums cannot be expressed)."""

def tool_definitions(format: str = "mcp") -> List[Dict[str, Any]]:
    """The nine browser tools as JSON Schema, in MCP ("mcp") or function-calling ("openai") form."""

def managed_tool_definitions(
    format: str = "mcp",
    tabs: bool = False,
    files: bool = False,
    vision: bool = False,
    *,
    data_handling: str = "standard",
) -> List[Dict[str, Any]]:
    """The managed browser tool family (browser_snapshot, browser_click, …) for those caps as JSON Schema; data_handling="strict" lists only what strict data handling exposes."""

def error_table() -> List[Dict[str, Any]]:
    """jevgate's error table, one dict per code in table order: {"code", "http_status",
    "family", "retryable", "worker_code"} (``jevgate.codes`` lists the same codes)."""

@final
class LocalBrowser:
    """A headless Chromium started by jevgate; a context manager."""

    def __new__(
        cls, *, executable: Optional[Union[str, os.PathLike[str]]] = None, profile_dir: Optional[Union[str, os.PathLike[str]]] = None
    ) -> "LocalBrowser": ...
    def execute(self, command: Mapping[str, Any]) -> Dict[str, Any]:
        """Run {"tool": ..., "args": {...}} (observe, snapshot, page_click, page_type, ...).

        {"tool": "operation_status", "args": {"operationId": ...}} reads this browser's record of
        the last 1,000 operations it ran: {"operationId", "status": "executed" | "not_executed" |
        "unknown", "outcome", "tool"?, "errorCode"?, "atMs"?} (ArgumentError for a malformed id)."""
    def navigate(self, url: str) -> Dict[str, Any]: ...
    def observe(self) -> Dict[str, Any]: ...
    def snapshot(self, region: Optional[str] = None) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "LocalBrowser": ...
    def __exit__(
        self,
        _exc_type: Optional[Type[BaseException]] = None,
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> None: ...

@final
class DeviceWorker:
    """The reference device worker: serves the nine browser tools from a LocalBrowser (or every
    command with executor(tool, args) -> result; raise jevgate.ToolError to fail one) over a
    gateway's channel; a context manager."""

    def __new__(
        cls,
        url: str,
        token: str,
        browser: Optional[LocalBrowser] = None,
        *,
        executor: Optional[Callable[[str, Dict[str, Any]], Any]] = None,
        tls_roots_pem: Optional[bytes] = None,
        protocol: int = 2,
        connect_timeout: float = 10.0,
    ) -> "DeviceWorker": ...
    @property
    def device_id(self) -> str: ...
    @property
    def running(self) -> bool: ...
    @property
    def commands_served(self) -> int: ...
    def wait(self, timeout: Optional[float] = None) -> Optional[Dict[str, Any]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "DeviceWorker": ...
    def __exit__(
        self,
        _exc_type: Optional[Type[BaseException]] = None,
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> None: ...

@final
class CancelToken:
    """Cancels an evaluation from another thread (JEV_CANCELLED)."""

    def __new__(cls) -> "CancelToken": ...
    def cancel(self) -> None: ...

@final
class ChannelHandle:
    """A running device-worker channel server."""

    @property
    def url(self) -> str: ...
    @property
    def port(self) -> int: ...
    def stop(self) -> None: ...

@final
class Computer:
    """One paired computer helper (jevgate-computer) driven for one conversation:
    Gateway.computer_target(owner, root_session, device_id)."""

    @property
    def device_id(self) -> str: ...
    def observe(self) -> Dict[str, Any]:
        """{"contractVersion", "application", "windowTitle", "controls", "focused"?, "text",
        "supportedActions", "capabilities", "omitted"}; CONSENT_REQUIRED before approval."""
    def act(self, command: Mapping[str, Any]) -> Dict[str, Any]:
        """{"operation_id", "kind": "press"|"set_text"|"focus"|"key", "ref"?, "text"?, "key"?};
        OUTCOME_UNKNOWN means it may have run: read operation_status, never resend."""
    def operation_status(self, operation_id: str) -> Dict[str, Any]:
        """{"state": "not_found"}, {"state": "unreadable"} or the helper's receipt."""
    def request_access(self) -> Dict[str, Any]:
        """Waits for the person's approval: {"state": "granted", "applications", "expiresAt"}."""

def parse_command(text: str) -> Dict[str, Any]:
    """The intent of a user command, e.g. {"intent": "scroll", "direction": "down"}."""

def split_steps(text: str) -> Optional[List[str]]:
    """The steps of a message, or None for the one-command path."""

def split_parts(text: str) -> List[str]:
    """The parts of one step joined by แล้ว, จากนั้น or then."""

def check_model_address(text: str) -> str:
    """The URL to open for a model-produced address; GrammarError NAVIGATION_UNRESOLVED."""

@final
class ManualClock:
    """A clock that moves only when told (tests, simulations). Pass it as Gateway(clock=...)."""

    def __new__(cls) -> "ManualClock": ...
    def advance(self, seconds: float) -> None:
        """Move monotonic and wall time forward (saturating at 9999-12-31T23:59:59.999Z); ArgumentError (a ValueError, INVALID_ARGUMENT) if negative or not finite."""
    def set_wall(self, unix_seconds: float) -> None:
        """Set wall time without moving monotonic time (a suspend or an NTP jump); saturates at year 9999; ArgumentError if negative or not finite."""
    @property
    def now(self) -> float:
        """Monotonic seconds since creation."""
    @property
    def wall_ms(self) -> int: ...

@final
class Leases:
    """Device control leases of a gateway (SPEC §4.1)."""

    def acquire(self, device_id: str, root_session: str) -> Dict[str, Any]:
        """Acquire or renew: {"acquired": bool, "expiresAt": unix_ms, "fencingToken": int} (the
        same token for every renewal of one tenure, strictly greater for every later one);
        LeaseError otherwise."""
    def renew(self, device_id: str, root_session: str) -> Dict[str, Any]: ...
    def take_back(self, device_id: str, principal: str, *, delegated: bool = False) -> bool:
        """The owner takes the device back; True when a holder was dispossessed.
        AccessDeniedError for anyone else, a delegated credential, or a device with no owner."""
    def status(
        self, device_id: str, principal: str, *, root_session: Optional[str] = None, delegated: bool = False
    ) -> Dict[str, Any]:
        """{"held", "heldByRootSession", "expiresAt", "revoked"}."""
    def release_session(self, root_session: str) -> int: ...
    def set_device_owner(self, device_id: str, owner: str) -> None:
        """Records (and stores) the device's owner; a device with no owner accepts nobody."""
    def reap(self) -> int: ...
    def browser_call(
        self,
        thread_id: str,
        organization: str,
        *,
        mode: Optional[str] = None,
        profile_key: Optional[str] = None,
        authenticated_allowed: bool = True,
    ) -> "BrowserCall":
        """Start a browser call's session lease (one live session per organization+profile)."""

@final
class BrowserCall:
    """A browser tool call's session; a context manager."""

    session_id: str
    mode: str
    created: bool
    def execute(self, command: Mapping[str, Any]) -> Dict[str, Any]:
        """Run {"tool": ..., "args": {...}} in this session's local browser (gw.enable_local_browsers()).

        After end(): ArgumentError INVALID_ARGUMENT naming `call`, as jevgate_browser_call_execute."""
    def end(self) -> None: ...
    def __enter__(self) -> "BrowserCall": ...
    def __exit__(
        self,
        _exc_type: Optional[Type[BaseException]] = None,
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> None: ...

@final
class Tasks:
    """Browser tasks of a gateway (R-TSK): `gw.tasks`. `owner` is
    {"agentId", "principalId", "conversationId"}; every call checks the whole triple
    (AccessDeniedError ACCESS_DENIED for an id that is not the owner's: an unknown id and
    another owner's task answer alike). Browser tasks need the configuration's Jev and
    features.browserTasks (TaskError ORCHESTRATION_DISABLED) and an agent with Jev access
    (AccessDeniedError EXECUTION_DENIED), checked at spawn, at each command and again before
    each request starts; with features.browserSteps off a step list runs as one direct
    command. Status dicts: {"id", "owner", "target", "goal", "revision", "controller",
    "state", "reason", "outcome", "actions", "evaluations", "actionLog", "stepRun",
    "lastDispatchedMutation", "queuedCommands", "createdAt", "updatedAt"}; `state` is one of
    queued, running, waiting_input, completed, failed, cancelled, needs_reconciliation. A
    computer task's open session adds "computerConnection": connected, disconnected,
    waiting_access or unknown, checked every five seconds of the gateway's clock."""

    def spawn(
        self,
        owner: Mapping[str, Any],
        goal: str = ...,
        *,
        user_message: Optional[str] = None,
        autopilot: Optional[Mapping[str, Any]] = None,
        target: Optional[Mapping[str, Any]] = None,
        start_url: Optional[str] = None,
        budget: Optional[Mapping[str, Any]] = None,
        keep_open: bool = False,
        on_outcome: Optional[Callable[[Dict[str, Any]], object]] = None,
    ) -> Dict[str, Any]:
        """Start a task and return its status right after the start: a dict as `status` returns
        it (its state usually still queued or running); the task's id, a UUID, is `["id"]`.
        `target` {"kind": "local", "profile"?}, {"kind": "device", "deviceId"} or {"kind": "computer", "deviceId"}; `budget`
        {"maxSteps", "maxEvaluations", "timeoutMs"} (ArgumentError naming the argument when
        either is not that shape). `goal` is the agent's words: a goal run toward it, each action
        checked for impact first (words with no action: the session is ready). `user_message` is
        the person's own message: a step list there runs verbatim as theirs, and with no goal it
        runs as their direct command. `autopilot` {"goal", "values": {name: value}, "maxSteps"?}
        makes the first round an autopilot run (the browser_autopilot loop with the task's
        receipts; the model sees value names only; ArgumentError-family INVALID_TOOL_ARGUMENTS
        for bad arguments). With none, the session opens and waits for commands. `on_outcome` receives
        {"taskId", "line", "reason"} for each settled outcome line, on the task's thread with
        the GIL taken; what it raises is dropped (the task goes on)."""
    def status(self, owner: Mapping[str, Any], id: str) -> Dict[str, Any]: ...
    def wait(self, owner: Mapping[str, Any], id: str, timeout: float) -> Dict[str, Any]:
        """Wait (GIL released, Ctrl-C interrupts) until the task is neither queued nor running,
        or `timeout` seconds passed (math.inf: no bound); returns its status then."""
    def command(self, owner: Mapping[str, Any], id: str, text: str) -> Dict[str, Any]:
        """Queue the next direct command or step list on the open session; returns its
        control receipt (``commandId``, ``state`` ``accepted``; later ``running``, ``done``,
        ``not_done``, ``unknown`` or ``dropped`` with ``reason`` in ``status()["commands"]``)
        (TaskError AUTOMATION_SESSION_CLOSED, COMMAND_QUEUE_FULL, ORCHESTRATION_DISABLED;
        AccessDeniedError EXECUTION_DENIED; ArgumentError for empty or > 4000 chars)."""
    def control(
        self,
        owner: Mapping[str, Any],
        task_id: str,
        *,
        id: str,
        action: str,
        expected_revision: int,
        text: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Steer the task: ``action`` pause | revise (with ``text``) | resume | agent | user;
        ``id`` a UUID you choose (the same id and contents answer the same). Returns the
        status after the command (ArgumentError INVALID_INPUT; TaskError REVISION_CONFLICT,
        STATE_CONFLICT, IDEMPOTENCY_CONFLICT, NOTHING_TO_RESUME, AUTOMATION_SESSION_CLOSED;
        AccessDeniedError)."""
    def update(
        self,
        owner: Mapping[str, Any],
        task_id: str,
        *,
        expected_revision: int,
        goal: str,
        mode: str = "when_ready",
    ) -> Dict[str, Any]:
        """Continue the task with a revised goal (after the active request settles; a
        completed or failed task is reopened on a fresh observation). Returns the status;
        ``pendingRevisions`` lists it until it starts (ArgumentError INVALID_INPUT; TaskError
        REVISION_CONFLICT, STATE_CONFLICT, AUTOMATION_SESSION_CLOSED; AccessDeniedError)."""
    def answer(self, owner: Mapping[str, Any], task_id: str, field: str, text: str) -> Dict[str, Any]:
        """Answer the field question a step list stopped on (status ``fieldRequest``); the run
        continues from the step that asked (TaskError STATE_CONFLICT when no such question is
        pending; ArgumentError INVALID_INPUT for text outside 1..2000 characters)."""
    def verify(
        self,
        owner: Mapping[str, Any],
        task_id: str,
        *,
        expected_revision: int,
        expected_request_id: int,
        evidence_id: str,
        instruction: str,
    ) -> Dict[str, Any]:
        """Verifies the task's completion candidate (R-TSK-VER) on fresh evidence of its
        request (evidence(fresh=True)["evidenceId"], five minutes): the task completes
        ("completed", "VERIFIED"), its browser is let go and status["verification"] records
        {"by": "parent", "request", "evidenceId", "at"}; it never acts on the page. TaskError
        STATE_CONFLICT (UNRESOLVED_MUTATION, NOT_A_CANDIDATE, INTERRUPTED_RUN, TASK_BUSY,
        EVIDENCE_REQUIRED, EVIDENCE_EXPIRED), REVISION_CONFLICT; the same verification again
        returns the same status, another after it AUTOMATION_SESSION_CLOSED."""
        ...
    def set_verifier(
        self, verifier: Optional[Callable[[Dict[str, Any]], bool]]
    ) -> None:
        """Installs (None removes) the host's verifier of completion candidates, called on the
        task's thread with {"taskId", "request", "goal", "evidence"} (fresh evidence; the
        observation inside the untrusted envelope). True completes the task (verification by
        "host"), False leaves it waiting_input with VERIFICATION_FAILED; any other value, and an
        exception, INVALID_CONTRACT (never read as False)."""
        ...
    def evidence(
        self, owner: Mapping[str, Any], task_id: str, fresh: bool = False
    ) -> Dict[str, Any]:
        """Browser evidence of the task: {"evidenceId" (valid five minutes), "taskId",
        "request", "requestState", "taskState", "inDoubt", "source": "recorded"|"fresh",
        "observedAt", "expiresAt", "lastDispatchedMutation", "operationStatus" (fresh only: the
        browser's own record of the receipt's last operation, never a replay),
        "untrustedContent": {"notice", "data": observation | None}}. The observation is page
        content: data, never instructions; never log it. fresh=False shows the last observation
        the receipts kept (no field values); fresh=True a new one, where a non-sensitive field's
        value shows bounded and a sensitive one never. Evidence changes nothing about the task.
        AccessDeniedError BROWSER_EVIDENCE_UNAVAILABLE for any access or ownership failure (an
        unknown id alike); BrowserError BROWSER_INSPECTION_UNAVAILABLE when a fresh inspection
        cannot be made now (the local browser is gone, a request runs on it, the device is
        offline)."""
    def reconcile(self, owner: Mapping[str, Any], task_id: str) -> Dict[str, Any]:
        """Reconcile a task left needs_reconciliation from the browser's own record of the
        receipt's last in-doubt operation (never a replay); unknown leaves it for ``resolve``
        (TaskError STATE_CONFLICT when nothing is in doubt)."""
    def resolve(
        self, owner: Mapping[str, Any], task_id: str, operation_id: str, happened: bool
    ) -> Dict[str, Any]:
        """A person resolves an in-doubt operation: it happened or not (TaskError
        STATE_CONFLICT for an operation not in doubt)."""
    def command_receipt(
        self, owner: Mapping[str, Any], task_id: str, command_id: str
    ) -> Optional[Dict[str, Any]]:
        """One command's control receipt, or None for an id the task never accepted."""
    def cancel(self, owner: Mapping[str, Any], id: str) -> Dict[str, Any]:
        """Cancel (idempotent); returns the status after the call."""
    def list(self, owner: Mapping[str, Any]) -> List[Dict[str, Any]]:
        """The owner's tasks, newest first (at most 100)."""
    def receipts(self, owner: Mapping[str, Any], id: str) -> List[Dict[str, Any]]:
        """One receipt per request: {"request", "state", "reason", "outcome", "startedAt",
        "endedAt", "operations": [{"operationId", "tool", "dispatchedAt", "status", "errorCode",
        "result", "observation"}]}. Results and observations are private: never log them."""

@final
class Gateway:
    """An open gateway on a data directory. Use as a context manager, or call close(); a
    gateway collected without close() is closed then (its task threads joined, the GIL
    released while they finish)."""

    def __new__(
        cls,
        data_dir: Union[str, os.PathLike[str]],
        config: Optional[Union[str, Mapping[str, Any]]] = None,
        *,
        clock: Optional[ManualClock] = None,
    ) -> "Gateway": ...
    @property
    def leases(self) -> Leases: ...
    @property
    def tasks(self) -> Tasks:
        """Browser tasks: spawn, status, wait, command, cancel, list, receipts."""
    def agent_tool_definitions(self, format: str = "mcp") -> List[Dict[str, Any]]:
        """The agent tools (capabilities_list, the task tools, jev_evaluate) in "mcp" or "openai" form."""
    def agent_tools(self, format: str = "mcp") -> List[Dict[str, Any]]:
        """What call_agent_tool runs here: the agent tools, plus browser_autopilot when Jev is configured."""
    def tool_definitions(self, format: str = "mcp") -> List[Dict[str, Any]]:
        """The device tools call_tool serves here: nine, plus browser_autopilot when Jev is configured."""
    def call_agent_tool(
        self, owner: Mapping[str, str], name: str, args: Optional[Union[str, Mapping[str, Any]]] = None
    ) -> Dict[str, Any]:
        """Run one agent tool for the owner; page-derived text only under "untrustedContent"."""
    def pair(self, owner: str, request: Mapping[str, Any]) -> Dict[str, Any]:
        """{"device": {...}, "token": "..."}; the token is shown once."""
    def pair_computer(self, owner: str, request: Mapping[str, Any]) -> Dict[str, Any]:
        """A computer helper's pairing: {"device": {...}, "token": "..."}; authorizes nothing."""
    def computer_target(self, owner: str, root_session: str, device_id: str) -> Computer: ...
    def pairing_code(self, owner: str, *, ttl: float = 300.0) -> Dict[str, Any]:
        """{"code": "ABCD-EFGH", "expiresAt": <unix ms>}: a one-time code, ttl seconds (0 < ttl <= 600),
        redeemed once by the extension at POST /devices/pair; shown once, kept only hashed."""
    def unpair(self, owner: str, device_id: str) -> None: ...
    def devices(self, owner: str) -> List[Dict[str, Any]]: ...
    def serve_channel(
        self,
        addr: str = ...,
        *,
        tls_cert_pem: Optional[bytes] = None,
        tls_key_pem: Optional[bytes] = None,
        max_connections: Optional[int] = None,
        max_unauthenticated: Optional[int] = None,
        max_unauthenticated_per_address: Optional[int] = None,
        io_threads: Optional[int] = None,
    ) -> ChannelHandle: ...
    def call_tool(
        self,
        owner: str,
        root_session: str,
        tool: str,
        args: Optional[Mapping[str, Any]] = None,
        *,
        device_id: Optional[str] = None,
        inline_images: bool = False,
        agent_id: Optional[str] = None,
        on_progress: Optional[Callable[[str], Any]] = None,
    ) -> Dict[str, Any]:
        """{"success": True, "result": ...} or {"success": False, "errorCode": ..., "message": ...}."""
    def artifact(self, root_session: str, artifact_id: str) -> Tuple[str, bytes]: ...
    def enable_local_browsers(self, *, executable: Optional[Union[str, os.PathLike[str]]] = None) -> None:
        """Serve browser sessions with local headless Chromiums started on first use."""
    def browser_tool(
        self,
        thread_id: str,
        organization: str,
        name: str,
        args: Any = None,
        *,
        profile_key: Optional[str] = None,
        authenticated_allowed: bool = True,
        data_handling: str = "standard",
    ) -> Dict[str, Any]:
        """Run one managed browser tool on the thread's local browser session; returns the result dict."""
    def set_managed_caps(self, *, tabs: bool = False, files: bool = False, vision: bool = False) -> None:
        """Set which optional managed tools this gateway serves (tabs, files; vision reserved)."""
    def set_managed_workspace(self, path: Optional[Union[str, os.PathLike[str]]]) -> None:
        """Name the workspace directory the file tools are confined to (None removes it)."""
    def begin_browser_turn(self, thread_id: str) -> None:
        """Begin a new turn for browser_console_messages / browser_network_requests of the thread."""
    def delete_artifacts(self, root_session: str) -> int:
        """Delete every stored screenshot of a root session (its conversation ended); return how many."""
    def purge_artifacts(self) -> int:
        """Delete the screenshots older than the retention (24 h) by the gateway clock; return how many."""
    def evaluate(
        self, call: Union[str, bytes, bytearray, Mapping[str, Any]], *, cancel: Optional[CancelToken] = None
    ) -> Dict[str, Any]:
        """One Jev evaluation: {"requestId", "requestedModel", "model", "answers", "usage", "billing"?}."""
    def usage(self, agent_id: str, limit: int = ..., offset: int = ...) -> Dict[str, Any]: ...
    def set_jev_callback(self, callback: Optional[Callable[[Dict[str, Any]], Any]]) -> None: ...
    def think(self, agent_id: str, instructions: str, input: str, *, timeout_ms: Optional[int] = None) -> Optional[str]:
        """The thinking helper: text, or None for missing information; failures raise."""
    @property
    def generation(self) -> int:
        """The live configuration generation (1 after open, +1 per successful reload)."""
    @property
    def closed(self) -> bool: ...
    def reload(self, config: Union[str, Mapping[str, Any]]) -> int:
        """Validate and swap in a configuration atomically; return the new generation."""
    def doctor(self) -> Dict[str, Any]:
        """Local readiness checks: {"ok": bool, "checks": [{"name", "status", "code"?, "detail"}]}."""
    def secret_env_names(self) -> List[str]:
        """Environment variable names holding credentials this gateway reads."""
    def close(self) -> None:
        """Close the gateway and release the data directory. Idempotent."""
    def __enter__(self) -> "Gateway": ...
    def __exit__(
        self,
        _exc_type: Optional[Type[BaseException]] = None,
        _exc: Optional[BaseException] = None,
        _tb: Optional[TracebackType] = None,
    ) -> None: ...
