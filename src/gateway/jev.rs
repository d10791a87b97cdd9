//! The Jev methods of [`Gateway`] (R-JEV, R-PRV-THINK): evaluations, usage, the callback
//! provider and the thinking helper. Thin: each lends the Jev client a [`JevContext`] (clock,
//! live configuration, closed flag) and forwards; the client never sees the gateway itself.

use super::Gateway;
use crate::jev::{
    EvaluateCall, Evaluation, JevCallback, JevContext, Limits, ThinkRequest, Thought, UsagePage,
};
use crate::CancelToken;
use crate::{Error, Result};

impl Gateway {
    /// What the Jev client may see of this gateway for one call: the clock, the live
    /// configuration and the closed flag.
    fn jev_context(&self) -> JevContext<'_> {
        JevContext::new(&self.inner.clock, &self.inner.live, &self.inner.closed)
    }

    /// Runs one Jev evaluation (R-JEV): access check, request checks, ledger, limiter and queue,
    /// credential resolution, provider, validator, access re-check, usage record. Blocks until
    /// the answer, an error, or the `timeoutMs` deadline.
    ///
    /// ```
    /// use jevgate::{Config, Gateway, GatewayOptions};
    /// use jevgate::jev::{EvalAnswer, EvaluateCall, Limits, Question, Questions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let config = Config::from_json_str(
    ///     r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#).unwrap();
    /// let gw = Gateway::open(GatewayOptions::new(dir.path(), config)).unwrap();
    /// let q = Questions::new([Question::choice("next", "What next?",
    ///     [("explain", "Compare the options"), ("execute", "Execute the choice")]).unwrap()],
    ///     &Limits::default()).unwrap();
    /// let e = gw.evaluate(&EvaluateCall::new("assistant", "Compare the options please", q)).unwrap();
    /// assert_eq!(e.model, "local-heuristic-1");
    /// assert!(matches!(e.answer("next"), Some(EvalAnswer::Choice { .. })));
    /// assert_eq!(gw.usage("assistant", 10, 0).unwrap().total, 1);
    /// gw.close();
    /// ```
    pub fn evaluate(&self, call: &EvaluateCall) -> Result<Evaluation> {
        self.inner
            .jev
            .evaluate(&self.jev_context(), call, &CancelToken::new())
    }

    /// [`Gateway::evaluate`], cancellable from another thread through `cancel`
    /// (`JEV_CANCELLED`).
    pub fn evaluate_with_cancel(
        &self,
        call: &EvaluateCall,
        cancel: &CancelToken,
    ) -> Result<Evaluation> {
        self.inner.jev.evaluate(&self.jev_context(), call, cancel)
    }

    /// JSON in, JSON out: parses `{agentId, sessionId?, taskId?, requestId?, state, questions}`,
    /// evaluates, and returns the evaluation's JSON (for the C and Python surfaces and the CLI).
    /// `cancel` may be `None`.
    pub fn evaluate_json(&self, call_json: &str, cancel: Option<&CancelToken>) -> Result<String> {
        let jev = &self.config().config.gateway.jev;
        let limits = Limits {
            max_questions: jev.max_questions as usize,
            max_input_bytes: jev.max_input_bytes as usize,
        };
        let call = EvaluateCall::from_json(call_json.as_bytes(), &limits)?;
        let fresh = CancelToken::new();
        let e = self
            .inner
            .jev
            .evaluate(&self.jev_context(), &call, cancel.unwrap_or(&fresh))?;
        Ok(e.to_json())
    }

    /// Usage records of `agent_id`, newest first (R-JEV-USAGE): `limit` 1..=100 (else
    /// `INVALID_ARGUMENT`), `offset` ≥ 0; `total` counts all the agent's records kept.
    pub fn usage(&self, agent_id: &str, limit: u32, offset: u64) -> Result<UsagePage> {
        self.check_open()?;
        self.inner.jev.usage(agent_id, limit, offset)
    }

    /// `(in flight, waiting)` Jev evaluations right now (R-JEV-LIMIT), for metrics and tests.
    pub fn jev_load(&self) -> (usize, usize) {
        self.inner.jev.load()
    }

    /// [`Gateway::usage`] as JSON (`{"records": [...], "total": n}`), for the C and Python
    /// surfaces.
    pub fn usage_json(&self, agent_id: &str, limit: u32, offset: u64) -> Result<String> {
        let page = self.usage(agent_id, limit, offset)?;
        serde_json::to_string(&page).map_err(|_| Error::Internal {
            reason: "cannot encode usage records".into(),
        })
    }

    /// Registers (or, with `None`, removes) the function answering evaluations when
    /// `provider` is `callback`. Its responses go through the validator like any provider's.
    pub fn set_jev_callback(&self, callback: Option<JevCallback>) {
        self.inner.jev.set_callback(callback);
    }

    /// The thinking helper (R-PRV-THINK): returns only `{text: string|null}`; failures are
    /// errors and never become text.
    pub fn think(&self, request: &ThinkRequest) -> Result<Thought> {
        crate::jev::thinking_call(&self.jev_context(), &self.inner.jev, request)
    }
}
