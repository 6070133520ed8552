//! The loop over client messages and finished work: routes requests to their handlers (read requests on the
//! worker pool, execution commands on their own threads), notifications to `handlers::notifications`, the
//! client's replies to the outgoing request they answer; then schedules diagnostics once per burst.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crossbeam_channel::{Receiver, select, unbounded};
use lsp_server::{Connection, ErrorCode, ExtractError, Message, Request, RequestId, Response};
use lsp_types::{self as lsp, request as r, request::Request as _};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::SessionEnd;
use super::capabilities::Negotiated;
use super::global_state::{GlobalState, Job, Outgoing, Run, Task};
use super::handlers::{self, execute};
use super::snapshot::Snapshot;

/// How long `exit` waits for the commands in flight to end.
const RUN_STOP_GRACE: Duration = Duration::from_secs(10);

/// Serves the client after `initialize` until `exit` (or until the client goes away).
pub fn run(connection: Connection, negotiated: Negotiated) -> anyhow::Result<SessionEnd> {
    let mut state = GlobalState::new(connection.sender, start_workers(), negotiated);
    let result = main_loop(&mut state, &connection.receiver);
    // Whatever ended the session, its commands end; the runs go on under their supervisors.
    state.stop_runs(RUN_STOP_GRACE);
    result
}

/// A small pool for read requests and diagnostics; runs get their own threads since they last minutes.
fn start_workers() -> crossbeam_channel::Sender<Job> {
    let (jobs, job_receiver) = unbounded::<Job>();
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4);
    for index in 0..workers {
        let receiver: Receiver<Job> = job_receiver.clone();
        let _ = std::thread::Builder::new().name(format!("wb-lsp-worker-{index}")).spawn(move || {
            for job in receiver {
                job();
            }
        });
    }
    jobs
}

/// Whether the session goes on after a message.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Exit,
}

fn main_loop(state: &mut GlobalState, receiver: &Receiver<Message>) -> anyhow::Result<SessionEnd> {
    let exit = |state: &GlobalState| {
        if state.shutdown_requested { SessionEnd::Clean } else { SessionEnd::ExitWithoutShutdown }
    };
    loop {
        select! {
            recv(receiver) -> message => {
                let Ok(message) = message else { return Ok(SessionEnd::Clean) };
                if handle_message(state, message)? == Flow::Exit {
                    return Ok(exit(state));
                }
                // Apply everything already queued before recomputing anything: a burst costs one check.
                while let Ok(message) = receiver.try_recv() {
                    if handle_message(state, message)? == Flow::Exit {
                        return Ok(exit(state));
                    }
                }
            }
            recv(state.tasks) -> task => {
                match task {
                    Ok(Task::Response(response)) => state.respond(response)?,
                    Ok(Task::Diagnostics { generation, owner, result }) => {
                        state.diagnostics_computed(generation, owner, result)?;
                    }
                    Ok(Task::Catalog { generation, catalog }) => state.catalog_read(generation, catalog),
                    Err(_) => {}
                }
            }
        }
        state.schedule_diagnostics();
    }
}

fn handle_message(state: &mut GlobalState, message: Message) -> anyhow::Result<Flow> {
    match message {
        Message::Request(request) => on_request(state, request)?,
        Message::Notification(notification) if notification.method == "exit" => return Ok(Flow::Exit),
        Message::Notification(notification) => handlers::notifications::handle(state, notification)?,
        Message::Response(response) => on_response(state, response)?,
    }
    Ok(Flow::Continue)
}

fn on_request(state: &mut GlobalState, request: Request) -> anyhow::Result<()> {
    if state.shutdown_requested {
        let message = "the server is shutting down".to_owned();
        return state.send(Response::new_err(request.id, ErrorCode::InvalidRequest as i32, message));
    }
    #[cfg(feature = "test-hooks")]
    let test_hooks = state.test_hooks;
    let mut dispatcher = RequestDispatcher { request: Some(request), state, outcome: Ok(()) };
    dispatcher
        .on_loop(r::Shutdown::METHOD, shutdown)
        .on::<r::Completion>(handlers::completion::handle)
        .on::<r::HoverRequest>(handlers::hover::handle)
        .on::<r::GotoDefinition>(handlers::definition::handle)
        .on::<r::References>(handlers::references::handle)
        .on::<r::PrepareRenameRequest>(handlers::rename::prepare)
        .on::<r::Rename>(handlers::rename::handle)
        .on::<r::DocumentSymbolRequest>(handlers::symbols::handle)
        .on::<r::FoldingRangeRequest>(handlers::folding::handle)
        .on::<r::SelectionRangeRequest>(handlers::structure::selection_ranges)
        .on::<r::DocumentHighlightRequest>(handlers::structure::document_highlights)
        .on::<r::SemanticTokensFullRequest>(handlers::structure::semantic_tokens)
        .on::<r::InlayHintRequest>(handlers::inlay::handle)
        .on::<r::Formatting>(handlers::formatting::document)
        .on::<r::RangeFormatting>(handlers::formatting::range)
        .on::<r::DocumentLinkRequest>(handlers::links::handle)
        .on::<r::CodeLensRequest>(handlers::lenses::code_lens)
        .on::<r::CodeActionRequest>(handlers::code_action::handle)
        .on::<r::DocumentDiagnosticRequest>(handlers::diagnostics::document)
        .on::<r::WorkspaceDiagnosticRequest>(handlers::diagnostics::workspace)
        .on_loop(r::ExecuteCommand::METHOD, handlers::commands::execute);
    #[cfg(feature = "test-hooks")]
    if test_hooks {
        dispatcher.on::<super::ext::DebugPanic>(|_, _| panic!("requested by a test"));
    }
    dispatcher.finish()
}

/// `shutdown`: refuse further requests and let go of the runs in flight (they go on; their commands answer
/// so). Its parameters, which should be absent, are not looked at.
fn shutdown(state: &mut GlobalState, id: RequestId, _: serde_json::Value) -> anyhow::Result<()> {
    state.shutdown_requested = true;
    state.detach_runs();
    state.send(Response::new_ok(id, ()))
}

/// Routes one request to the first handler registered for its method.
struct RequestDispatcher<'a> {
    request: Option<Request>,
    state: &'a mut GlobalState,
    outcome: anyhow::Result<()>,
}

impl RequestDispatcher<'_> {
    /// The request's parameters when its method is `method`; unreadable ones are answered with `InvalidParams`.
    fn parse<P: DeserializeOwned>(&mut self, method: &str) -> Option<(RequestId, P)> {
        let request = self.request.take()?;
        let id = request.id.clone();
        match request.extract::<P>(method) {
            Ok(extracted) => Some(extracted),
            Err(ExtractError::MethodMismatch(request)) => {
                self.request = Some(request);
                None
            }
            Err(ExtractError::JsonError { error, .. }) => {
                let message = format!("invalid params: {error}");
                self.outcome = self.state.send(Response::new_err(id, ErrorCode::InvalidParams as i32, message));
                None
            }
        }
    }

    /// A read request, run on a worker against a snapshot.
    fn on<R>(&mut self, handler: fn(&Snapshot, R::Params) -> anyhow::Result<R::Result>) -> &mut Self
    where
        R: lsp::request::Request,
        R::Params: DeserializeOwned + Send + 'static,
        R::Result: Serialize,
    {
        if let Some((id, params)) = self.parse::<R::Params>(R::METHOD) {
            self.outcome = self.state.spawn::<R>(id, params, handler);
        }
        self
    }

    /// A request handled on the loop thread, with the state (it answers, or arranges the answer, itself).
    fn on_loop<P: DeserializeOwned>(
        &mut self,
        method: &str,
        handler: fn(&mut GlobalState, RequestId, P) -> anyhow::Result<()>,
    ) -> &mut Self {
        if let Some((id, params)) = self.parse::<P>(method) {
            self.outcome = handler(self.state, id, params);
        }
        self
    }

    /// Answers a request no handler took with `MethodNotFound`.
    fn finish(&mut self) -> anyhow::Result<()> {
        if let Some(request) = self.request.take() {
            let message = format!("unknown method {}", request.method);
            return self.state.send(Response::new_err(request.id, ErrorCode::MethodNotFound as i32, message));
        }
        std::mem::replace(&mut self.outcome, Ok(()))
    }
}

impl GlobalState {
    /// Runs a read request on a worker with a snapshot; panics and errors become error responses.
    pub fn spawn<R>(
        &mut self,
        id: RequestId,
        params: R::Params,
        handler: fn(&Snapshot, R::Params) -> anyhow::Result<R::Result>,
    ) -> anyhow::Result<()>
    where
        R: lsp::request::Request,
        R::Params: Send + 'static,
        R::Result: Serialize,
    {
        self.req_queue.incoming.register(id.clone(), ());
        let snapshot = self.snapshot();
        let tasks = self.task_sender.clone();
        let job: Job = Box::new(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler(&snapshot, params)));
            let _ = tasks.send(Task::Response(response_of(id, outcome)));
        });
        self.jobs.send(job).map_err(|_| anyhow::anyhow!("the worker pool stopped"))
    }

    /// Runs a command that writes (`workbench.applyOutcome`) on a thread of its own, outside the cancellable
    /// worker pool: once started it finishes, and its answer always says what it did. A `$/cancelRequest` for
    /// it is ignored; `exit` waits for it (see [`GlobalState::stop_runs`]).
    pub fn spawn_mutation<P>(
        &mut self,
        id: RequestId,
        params: P,
        handler: fn(&Snapshot, P) -> anyhow::Result<Option<serde_json::Value>>,
    ) -> anyhow::Result<()>
    where
        P: Send + 'static,
    {
        self.req_queue.incoming.register(id.clone(), ());
        let snapshot = self.snapshot();
        let tasks = self.task_sender.clone();
        let request = id.clone();
        let spawned = std::thread::Builder::new().name("wb-lsp-write".into()).spawn(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler(&snapshot, params)));
            let _ = tasks.send(Task::Response(response_of(request, outcome)));
        });
        match spawned {
            Ok(thread) => {
                self.mutations.insert(id, thread);
                Ok(())
            }
            Err(error) => {
                let message = format!("cannot start the command: {error}");
                self.respond(Response::new_err(id, ErrorCode::RequestFailed as i32, message))
            }
        }
    }

    /// Starts an execution command (`workbench.dryRun`, `smoke`, `run`, `attach`) on its own thread: it
    /// reports progress, streams events (run, attach) and can be cancelled by `$/cancelRequest` or by
    /// cancelling its progress; the session ending lets go of it.
    pub fn spawn_run(
        &mut self,
        id: RequestId,
        params: lsp::ExecuteCommandParams,
        handler: execute::Handler,
    ) -> anyhow::Result<()> {
        let (cancel, detach) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let token = params.work_done_progress_params.work_done_token.clone();
        self.req_queue.incoming.register(id.clone(), ());
        let snapshot = self.snapshot();
        let tasks = self.task_sender.clone();
        let sender = self.sender();
        let flags = execute::Flags { cancel: Arc::clone(&cancel), detach: Arc::clone(&detach) };
        let request = id.clone();
        let spawned = std::thread::Builder::new().name("wb-lsp-run".into()).spawn(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| handler(&snapshot, params, &sender, flags)));
            let _ = tasks.send(Task::Response(response_of(request, outcome)));
        });
        let thread = spawned.map_err(|e| anyhow::anyhow!("cannot start the run: {e}"))?;
        self.runs.insert(id, Run { cancel, detach, token, thread: Some(thread) });
        Ok(())
    }
}

/// The response to a request from its handler's result; a panic becomes an `InternalError` answer.
fn response_of<T: Serialize>(id: RequestId, outcome: std::thread::Result<anyhow::Result<T>>) -> Response {
    match outcome {
        Ok(Ok(result)) => Response::new_ok(id, result),
        Ok(Err(error)) => Response::new_err(id, ErrorCode::RequestFailed as i32, format!("{error:#}")),
        Err(panic) => {
            let detail = super::global_state::panic_message(panic.as_ref());
            Response::new_err(id, ErrorCode::InternalError as i32, format!("the request handler failed: {detail}"))
        }
    }
}

/// A reply from the client to one of the server's requests.
fn on_response(state: &mut GlobalState, response: Response) -> anyhow::Result<()> {
    match state.req_queue.outgoing.complete(response.id.clone()) {
        Some(Outgoing::Configuration) => {
            if let Some(result) = response.result {
                state.configuration_received(result);
            }
            Ok(())
        }
        Some(Outgoing::Migration(request)) => handlers::commands::migration_answered(state, request, response),
        Some(Outgoing::Progress) => {
            state.progress_created(response.error.is_none());
            Ok(())
        }
        Some(Outgoing::Other) | None => Ok(()),
    }
}
