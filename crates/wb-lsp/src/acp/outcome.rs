//! A run's pending outcome offered to the ACP client file by file: each changed file is a `tool_call` (kind
//! `edit`) whose content is the diff, and a `session/request_permission` asks whether to take it. A file taken is
//! applied with every guarantee of `wb-lsp outcome --apply --only` (fingerprints checked, journalled); the rest
//! stays pending, and the summary says how to take it later.

use std::sync::atomic::AtomicBool;

use serde_json::{Value, json};
use wb_outcomes::review::{FileChange, Side, SideContent, side_content};
use wb_outcomes::{ContentStore, OutcomeStore, ReceiptState};

use super::Agent;

/// What the person decided for the files not yet asked about.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rest {
    Ask,
    TakeAll,
    SkipAll,
}

/// Offers the files of `run_id`'s final outcome when it is pending; the summary to tell the client, `None` when
/// there was nothing to offer.
pub(super) fn offer(agent: &Agent, session: &str, run_id: &str, stop: &AtomicBool) -> anyhow::Result<Option<String>> {
    let store = ContentStore::open(&wb_outcomes::try_default_home()?)?;
    let outcomes = OutcomeStore::new(&store);
    let Ok(id) = outcomes.resolve(run_id) else { return Ok(None) };
    if outcomes.receipt(&id)?.state != ReceiptState::Pending {
        return Ok(None);
    }
    let outcome = outcomes.load(&id)?;
    let bindings = outcomes.bindings(&id)?;
    let taken = wb_outcomes::apply::taken(&store, &id)?;
    let files: Vec<FileChange> =
        wb_outcomes::review::file_changes(&store, &outcome, &taken)?.into_iter().filter(|f| !f.taken).collect();
    if files.is_empty() {
        return Ok(None);
    }
    let (mut applied, mut skipped, mut rest) = (Vec::new(), Vec::new(), Rest::Ask);
    for file in &files {
        let root = match &file.workspace {
            None => bindings.primary.clone(),
            Some(name) => bindings.named.get(name).cloned(),
        };
        let path = root.map(|root| root.join(&file.path)).unwrap_or_else(|| file.path.clone().into());
        let path = path.display().to_string();
        let side = |side| side_content(&store, &outcome, &bindings, &file.label, side);
        let content = diff(&path, side(Side::Before)?, side(Side::After)?);
        let call_id = format!("{id}:{}", file.label);
        let update = |update: Value| agent.notify("session/update", json!({"sessionId": session, "update": update}));
        update(json!({"sessionUpdate": "tool_call", "toolCallId": call_id, "title": format!("Apply {}", file.label),
            "kind": "edit", "status": "pending", "content": content, "locations": [{"path": path}]}));
        let take = match rest {
            Rest::TakeAll => true,
            Rest::SkipAll => false,
            Rest::Ask => {
                let options = json!([
                    {"optionId": "apply", "name": "Apply this file", "kind": "allow_once"},
                    {"optionId": "apply_all", "name": "Apply every file", "kind": "allow_always"},
                    {"optionId": "skip", "name": "Keep it for later", "kind": "reject_once"},
                    {"optionId": "skip_all", "name": "Keep every file for later", "kind": "reject_always"},
                ]);
                let params = json!({"sessionId": session, "options": options,
                    "toolCall": {"toolCallId": call_id, "title": format!("Apply {}", file.label), "kind": "edit",
                        "status": "pending", "content": content}});
                let result = agent.request("session/request_permission", params, stop);
                let chosen = result
                    .as_ref()
                    .and_then(|r| r.get("outcome"))
                    .filter(|o| o.get("outcome").and_then(Value::as_str) == Some("selected"))
                    .and_then(|o| o.get("optionId").and_then(Value::as_str));
                match chosen {
                    Some("apply_all") => rest = Rest::TakeAll,
                    Some("skip_all") | None => rest = Rest::SkipAll,
                    _ => {}
                }
                matches!(chosen, Some("apply" | "apply_all"))
            }
        };
        if !take {
            skipped.push(file.label.clone());
            let note = format!("Kept for later: wb-lsp outcome {id} --apply --only {}", file.label);
            update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": note}}]}));
            continue;
        }
        match wb_outcomes::apply::apply_only(&store, &id, None, std::slice::from_ref(&file.label)) {
            Ok(_) => {
                applied.push(file.label.clone());
                update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"}));
            }
            Err(error) => {
                skipped.push(file.label.clone());
                let message = format!("Not applied: {error}");
                update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": message}}]}));
            }
        }
    }
    let mut summary = format!("\n\nOutcome {id}: {} of {} files applied.", applied.len(), files.len());
    if !skipped.is_empty() {
        summary.push_str(&format!(" The rest stays pending: `wb-lsp outcome {id} --apply` takes it."));
    }
    Ok(Some(summary))
}

/// The tool call content that shows a change: the diff of two texts (no old text for a new file), or a line
/// that says what cannot be shown as text.
fn diff(path: &str, before: SideContent, after: SideContent) -> Value {
    let said = |text: String| json!([{"type": "content", "content": {"type": "text", "text": text}}]);
    match (before, after) {
        (SideContent::Absent, SideContent::Text { text, .. }) => {
            json!([{"type": "diff", "path": path, "oldText": null, "newText": text}])
        }
        (SideContent::Text { text: old, .. }, SideContent::Text { text: new, .. }) => {
            json!([{"type": "diff", "path": path, "oldText": old, "newText": new}])
        }
        (SideContent::Text { text: old, .. }, SideContent::Absent) => {
            let mut content = json!([{"type": "diff", "path": path, "oldText": old, "newText": ""}]);
            if let Some(list) = content.as_array_mut() {
                list.extend(said("The file is deleted.".to_owned()).as_array().cloned().unwrap_or_default());
            }
            content
        }
        (_, SideContent::Binary { size_bytes, .. }) => said(format!("A binary file of {size_bytes} bytes.")),
        (_, SideContent::Link { target }) => said(format!("A symbolic link to {target}.")),
        (_, SideContent::Absent) => said("The file is deleted.".to_owned()),
        (
            SideContent::NotKept { .. } | SideContent::Binary { .. } | SideContent::Link { .. },
            SideContent::Text { text, .. },
        ) => {
            json!([{"type": "diff", "path": path, "oldText": null, "newText": text}])
        }
        (_, SideContent::NotKept { size_bytes }) => said(format!("A file of {size_bytes} bytes.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_shown_as_the_diff_acp_defines() {
        let text = |text: &str| SideContent::Text { text: text.into(), mode: 0o644 };
        let changed = diff("/repo/a.md", text("old\n"), text("new\n"));
        assert_eq!(changed, json!([{"type": "diff", "path": "/repo/a.md", "oldText": "old\n", "newText": "new\n"}]));
        let created = diff("/repo/b.md", SideContent::Absent, text("hi\n"));
        assert_eq!(created[0]["oldText"], Value::Null);
        let deleted = diff("/repo/c.md", text("bye\n"), SideContent::Absent);
        assert_eq!(deleted[0]["newText"], "");
        assert_eq!(deleted[1]["content"]["text"], "The file is deleted.");
        let binary = diff("/repo/d.bin", SideContent::Absent, SideContent::Binary { size_bytes: 9, mode: 0o644 });
        assert_eq!(binary[0]["type"], "content");
    }
}
