//! `workspace/executeCommand`: routes each `workbench.*` command (documented in `docs/lsp-extensions.md`)
//! to its handler. The execution commands run on their own threads, `workbench.runs` and `workbench.outcome`
//! on the workers, and `workbench.kill` (it signals), `workbench.answer` and `workbench.applyOutcome` (they
//! write) on threads of their own that are never cancelled;
//! `workbench.migrate` and `workbench.checkWorkspace` change the server's state and run here.

use lsp_server::{ErrorCode, RequestId, Response};
use lsp_types::{self as lsp, request as r};

use super::super::ext::{self, CheckWorkspaceResult, MigrateArguments, MigrateResult};
use super::super::global_state::{GlobalState, Outgoing};
use super::{answering, code_action, execute, sessions, trials};

pub fn execute(state: &mut GlobalState, id: RequestId, params: lsp::ExecuteCommandParams) -> anyhow::Result<()> {
    match params.command.as_str() {
        ext::DRY_RUN => state.spawn_run(id, params, execute::dry_run),
        ext::SMOKE => state.spawn_run(id, params, execute::smoke),
        ext::RUN => state.spawn_run(id, params, execute::run),
        ext::ATTACH => state.spawn_run(id, params, execute::attach),
        ext::RUNS => state.spawn::<r::ExecuteCommand>(id, params, execute::runs),
        ext::SEND => state.spawn_run(id, params, sessions::send),
        ext::OUTCOME => state.spawn::<r::ExecuteCommand>(id, params, execute::outcome),
        ext::OUTCOME_FILE => state.spawn::<r::ExecuteCommand>(id, params, execute::outcome_file),
        ext::TRIAL => state.spawn_run(id, params, trials::trial),
        ext::TRIALS => state.spawn::<r::ExecuteCommand>(id, params, trials::trials),
        ext::OPEN_TRIAL_REPORT => state.spawn_run(id, params, trials::open_report),
        // They signal a run or write the workspace: never on the cancellable pool (the answer must say what
        // was done, and a cancelled request must not leave it half done).
        ext::KILL => state.spawn_mutation(id, params, execute::kill),
        ext::ANSWER => state.spawn_mutation(id, params, answering::answer),
        ext::APPLY_OUTCOME => state.spawn_mutation(id, params, execute::apply_outcome),
        ext::MIGRATE => migrate(state, id, &params),
        ext::CHECK_WORKSPACE => check_workspace(state, id),
        other => {
            let message = format!("unknown command {other}");
            state.send(Response::new_err(id, ErrorCode::InvalidParams as i32, message))
        }
    }
}

/// `workbench.migrate`: sends the migration as `workspace/applyEdit`; the command is answered when the
/// client replies ([`migration_answered`]).
fn migrate(state: &mut GlobalState, id: RequestId, params: &lsp::ExecuteCommandParams) -> anyhow::Result<()> {
    let Some(MigrateArguments { uri }) = MigrateArguments::from_params(params) else {
        let message = "workbench.migrate takes the manifest's URI".to_owned();
        return state.send(Response::new_err(id, ErrorCode::InvalidParams as i32, message));
    };
    match code_action::migration_edit(&state.snapshot(), &uri) {
        Ok(Some(edit)) => {
            state.req_queue.incoming.register(id.clone(), ());
            let params = lsp::ApplyWorkspaceEditParams { label: Some("Migrate to spec 1".into()), edit };
            state.request_client::<r::ApplyWorkspaceEdit>(params, Outgoing::Migration(id))
        }
        Ok(None) => {
            let result = MigrateResult { migrated: false, applied: None, failure_reason: None };
            state.send(Response::new_ok(id, result))
        }
        Err(error) => state.send(Response::new_err(id, ErrorCode::RequestFailed as i32, error.to_string())),
    }
}

/// The client's reply to a migration's `workspace/applyEdit` answers the `workbench.migrate` request: with
/// whether the edit was applied, or with the client's error.
pub fn migration_answered(state: &mut GlobalState, request: RequestId, reply: Response) -> anyhow::Result<()> {
    let answer = match (reply.error, reply.result) {
        (Some(error), _) => Err(format!("the client could not apply the migration: {}", error.message)),
        (None, result) => serde_json::from_value::<lsp::ApplyWorkspaceEditResponse>(result.unwrap_or_default())
            .map_err(|error| format!("the client's answer to workspace/applyEdit is unreadable: {error}")),
    };
    let response = match answer {
        Ok(answer) => Response::new_ok(
            request,
            MigrateResult {
                migrated: answer.applied,
                applied: Some(answer.applied),
                failure_reason: answer.failure_reason,
            },
        ),
        Err(message) => Response::new_err(request, ErrorCode::RequestFailed as i32, message),
    };
    state.respond(response)
}

/// `workbench.checkWorkspace`: re-scans every folder and re-checks every package.
fn check_workspace(state: &mut GlobalState, id: RequestId) -> anyhow::Result<()> {
    for root in state.roots.clone() {
        state.scan_root(&root);
    }
    state.mark_all_dirty();
    let result = CheckWorkspaceResult { packages: state.manifests.len() };
    state.send(Response::new_ok(id, result))
}
