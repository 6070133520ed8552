//! Trials through the built binary on the local runtime, with a scripted OpenCode: two tasks × two arms × three
//! repetitions graded by gates the agent never sees (the task that needs the package's instruction shows the
//! difference between the arms); the report files against their schema; an attempt that could not start is
//! `infra_error` and the only one `trial resume` runs; a trial SIGKILLed mid-way resumes without running a
//! finished attempt again; `--max-cost` stops admitting; `calibrate` flags a gate the untouched fixture passes;
//! `regrade` grades the kept outcomes again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wb_testsupport::git::git;
use wb_testsupport::{Output, World, finish_within, minimal, python};

const BIN: &str = env!("CARGO_BIN_EXE_wb-lsp");
/// Only the package's instructions say this; the scripted agent does the task right only when it reads it.
const MARKER: &str = "TRIAL-MARKER: the answer is fixed";
/// Written in every gate: a runner that finds it anywhere it can look has seen a gate.
const GATE_SECRET: &str = "GATE-SECRET-7f3a";

/// The scripted OpenCode: reads the instructions it was given, writes `answer.txt` (`fixed` only with the
/// marker), `hello.txt`, looks for the gates everywhere it is shown (its workspace, its staged configuration,
/// the package directory), reports a cost of $0.01, and sleeps `TRIAL_AGENT_SLEEP` seconds first.
const AGENT: &str = r#"
import json, os, sys, time
spy = os.environ.get("TRIAL_SPY", "")
time.sleep(float(os.environ.get("TRIAL_AGENT_SLEEP", "0")))
instructions = ""
try:
    for path in json.loads(os.environ.get("OPENCODE_CONFIG_CONTENT", "{}")).get("instructions", []):
        instructions += open(path).read()
except Exception as error:
    instructions = ""
seen = []
roots = [os.getcwd(), os.environ.get("OPENCODE_CONFIG_DIR", "")]
for root in [r for r in roots if r]:
    for directory, _, files in os.walk(root):
        for name in files:
            try:
                if "GATE-SECRET-7f3a" in open(os.path.join(directory, name), errors="ignore").read():
                    seen.append(os.path.join(directory, name))
            except OSError:
                pass
        if "trials" in os.listdir(directory) if os.path.isdir(directory) else False:
            seen.append(os.path.join(directory, "trials"))
answer = "fixed" if "TRIAL-MARKER" in instructions else "broken"
open("answer.txt", "w").write(answer + "\n")
open("hello.txt", "w").write("hello\n")
if spy:
    with open(os.path.join(spy, "%d.json" % os.getpid()), "w") as out:
        json.dump({"seen": seen, "answer": answer}, out)
def event(kind, part):
    part.update({"sessionID": "ses_1", "messageID": "msg_1", "id": "prt_" + kind})
    print(json.dumps({"type": kind, "timestamp": 1764480000020, "sessionID": "ses_1", "part": part}), flush=True)
event("text", {"type": "text", "text": "answered " + answer, "time": {"start": 1, "end": 2}})
event("step_finish", {"type": "step-finish", "reason": "stop", "cost": 0.01,
    "tokens": {"input": 100, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}}})
"#;

struct Trial {
    world: World,
    spy: PathBuf,
}

fn setup() -> Trial {
    let world = World::new();
    let package = world.package("tb", &minimal("tb", "opencode", "openai/gpt-5.1", ""));
    std::fs::write(package.join("instructions.md"), format!("{MARKER}\n")).unwrap();
    let agent = world.bin.join("opencode");
    std::fs::write(&agent, format!("#!{}\n{AGENT}", python().display())).unwrap();
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // `fix`: passes only with the package's instruction; `hello`: passes in every arm.
    task(&package, "fix", r#"{"kind": "dir", "path": "fixture"}"#, "grep -qx fixed answer.txt");
    std::fs::write(package.join("trials/fix/fixture/answer.txt"), "broken\n").unwrap();
    task(&package, "hello", r#"{"kind": "empty"}"#, "test -f hello.txt");
    let spy = world.root.join("spy");
    std::fs::create_dir_all(&spy).unwrap();
    Trial { world, spy }
}

/// Writes task `id` of `package` with one gate running `gate` (the gate's text carries [`GATE_SECRET`]).
fn task(package: &Path, id: &str, fixture: &str, gate: &str) {
    let dir = package.join("trials").join(id);
    std::fs::create_dir_all(dir.join("fixture")).unwrap();
    let text = format!(
        r#"{{"version": 1, "id": "{id}", "title": "Task {id}", "fixture": {fixture}, "timeoutMinutes": 5,
  "gates": [{{"id": "check", "title": "The check", "run": "{gate} # {GATE_SECRET}", "timeoutSeconds": 30}}]}}
"#
    );
    std::fs::write(dir.join("task.json"), text).unwrap();
    std::fs::write(dir.join("prompt.md"), format!("Do task {id}.\n")).unwrap();
}

impl Trial {
    fn command(&self) -> std::process::Command {
        let mut command = self.world.command(BIN);
        command.env("OPENAI_API_KEY", "sk-openai-test-value").env("TRIAL_SPY", &self.spy);
        command
    }

    fn wb(&self, args: &[&str]) -> Output {
        finish_within(self.command().args(args), Duration::from_secs(300), "the trial's end")
    }

    fn job(&self, id: &str) -> Value {
        let path = self.world.home.join(".workbench/trials").join(id).join("job.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn job_dir(&self, id: &str) -> PathBuf {
        self.world.home.join(".workbench/trials").join(id)
    }

    /// How many runs were started, all trials together.
    fn runs(&self) -> usize {
        std::fs::read_dir(self.world.home.join(".workbench/runs")).map_or(0, |entries| entries.count())
    }
}

/// The job id a trial printed on stderr (`trial wbt_…: …`).
fn job_id(output: &Output) -> String {
    let line = output.stderr.lines().find(|l| l.starts_with("trial wbt_")).unwrap_or_else(|| panic!("{output:?}"));
    line["trial ".len()..].split(':').next().unwrap().to_owned()
}

fn verdicts(job: &Value) -> Vec<(String, String, String)> {
    job["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (a["task"].as_str().unwrap().to_owned(), a["arm"].as_str().unwrap().to_owned(), a["verdict"].to_string())
        })
        .collect()
}

#[test]
fn a_trial_shows_what_the_package_changes_and_its_report_validates() {
    let trial = setup();
    let output = trial.wb(&["trial", ".workbenches/tb", "--reps", "3", "--parallel", "2"]);
    assert_eq!(output.code, 0, "{output:?}");
    let id = job_id(&output);
    let job = trial.job(&id);
    for (task, arm, verdict) in verdicts(&job) {
        let expected = if task == "fix" && arm == "plain" { "\"failed\"" } else { "\"works\"" };
        assert_eq!(verdict, expected, "{task} · {arm}: {job:#}");
    }
    assert_eq!(job["attempts"].as_array().unwrap().len(), 12);
    assert_eq!(trial.runs(), 12, "one run per attempt");
    // Every attempt's cost and tokens come from its run; its gate's log is the evidence.
    for attempt in job["attempts"].as_array().unwrap() {
        assert_eq!(attempt["cost_usd"], 0.01, "{attempt}");
        assert_eq!(attempt["tokens"], 120, "{attempt}");
        assert!(attempt["run_id"].as_str().unwrap().starts_with("wb_"), "{attempt}");
        assert_eq!(attempt["gates"][0]["exit_code"], if attempt["verdict"] == "works" { 0 } else { 1 });
    }
    // The agent never saw a gate or the trials directory, wherever it looked.
    let spied: Vec<Value> = std::fs::read_dir(&trial.spy)
        .unwrap()
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    assert_eq!(spied.len(), 12);
    for spy in &spied {
        assert_eq!(spy["seen"], serde_json::json!([]), "the agent saw the gates: {spy}");
    }
    // The frozen packages hold no trials; the attempts' copies are gone once graded.
    let dir = trial.job_dir(&id);
    assert!(dir.join("packages/workbench/.workbenches/tb/workbench.yml").is_file());
    assert!(!dir.join("packages/workbench/.workbenches/tb/trials").exists());
    assert!(!dir.join("attempts/0001/work").exists());

    // The report: the table at the end, the three files, report.json against its documented schema.
    assert!(output.stderr.contains("(all)"), "{}", output.stderr);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/trial-report.schema.json"))
            .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&report).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let fix_plain = report["cells"].as_array().unwrap().iter().find(|c| c["task"] == "fix" && c["arm"] == "plain");
    assert_eq!(fix_plain.unwrap()["works"], 0);
    let pair = report["pairs"].as_array().unwrap().iter().find(|p| p["task"] == "fix").unwrap();
    assert_eq!(pair["works_rate_difference"], -1.0, "{pair}");
    assert!(std::fs::read_to_string(dir.join("report.html")).unwrap().contains("<svg"));
    assert!(std::fs::read_to_string(dir.join("report.md")).unwrap().contains("fix"));

    // Status reads the job; a merged report of the job twice counts each attempt twice.
    let status = trial.wb(&["trial", "status", "--json"]);
    let status: Value = serde_json::from_str(status.stdout.trim()).unwrap();
    assert_eq!((status["done"].as_u64(), status["works"].as_u64()), (Some(12), Some(9)), "{status}");
    let out = trial.world.root.join("merged");
    let merged = trial.wb(&["trial", "report", &id, &id, "--out", out.to_str().unwrap(), "--json"]);
    assert_eq!(merged.code, 0, "{merged:?}");
    let merged: Value = serde_json::from_str(merged.stdout.trim()).unwrap();
    assert_eq!(merged["report"]["attempts"].as_array().unwrap().len(), 24);
    assert!(out.join("report.html").is_file());

    // A fixed gate, regraded: the kept outcomes graded again, no agent run.
    let gate_file = trial.world.repo.join(".workbenches/tb/trials/fix/task.json");
    let text = std::fs::read_to_string(&gate_file).unwrap().replace("grep -qx fixed answer.txt", "test -f answer.txt");
    std::fs::write(&gate_file, text).unwrap();
    let regraded = trial.wb(&["trial", "regrade", &id]);
    assert_eq!(regraded.code, 0, "{regraded:?}");
    assert!(regraded.stderr.contains("3 verdicts changed"), "{}", regraded.stderr);
    assert!(verdicts(&trial.job(&id)).iter().all(|(_, _, v)| v == "\"works\""));
    assert_eq!(trial.runs(), 12, "a regrade runs no agent");
}

#[test]
fn only_attempts_without_a_verdict_or_with_an_infrastructure_error_are_resumed() {
    let trial = setup();
    // Task `later`'s fixture is a repository that does not exist yet: its attempts cannot start.
    let package = trial.world.repo.join(".workbenches/tb");
    let made = trial.world.root.join("made");
    std::fs::create_dir_all(&made).unwrap();
    std::fs::write(made.join("README.md"), "upstream\n").unwrap();
    git(&made, &["init", "--quiet"]);
    git(&made, &["add", "."]);
    git(&made, &["commit", "--quiet", "-m", "upstream"]);
    let commit = git(&made, &["rev-parse", "HEAD"]).trim().to_owned();
    let upstream = trial.world.root.join("upstream");
    let fixture = format!(r#"{{"kind": "git", "url": "{}", "commit": "{commit}"}}"#, upstream.display());
    task(&package, "later", &fixture, "test -f hello.txt");
    let output = trial.wb(&["trial", ".workbenches/tb", "--task", "later", "--task", "hello", "--arms", "workbench"]);
    assert_eq!(output.code, 1, "infrastructure errors leave the trial to resume: {output:?}");
    let id = job_id(&output);
    let job = trial.job(&id);
    let infra: Vec<&Value> =
        job["attempts"].as_array().unwrap().iter().filter(|a| a["verdict"] == "infra_error").collect();
    assert_eq!(infra.len(), 1, "{job:#}");
    assert_eq!(infra[0]["task"], "later");
    assert!(infra[0]["reason"].as_str().unwrap().contains("fixture"), "{}", infra[0]);
    assert!(output.stderr.contains(&format!("wb-lsp trial resume {id}")), "{}", output.stderr);
    let hello_run =
        job["attempts"].as_array().unwrap().iter().find(|a| a["task"] == "hello").unwrap()["run_id"].clone();

    std::fs::rename(&made, &upstream).unwrap();
    let resumed = trial.wb(&["trial", "resume", &id]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(resumed.stderr.contains("1 of 2 attempts to run"), "{}", resumed.stderr);
    let job = trial.job(&id);
    assert!(verdicts(&job).iter().all(|(_, _, v)| v == "\"works\""), "{job:#}");
    let hello = job["attempts"].as_array().unwrap().iter().find(|a| a["task"] == "hello").unwrap();
    assert_eq!(hello["run_id"], hello_run, "a finished attempt is never run again");
    assert_eq!(trial.runs(), 2);
}

#[test]
fn a_trial_killed_mid_way_resumes_without_repeating_a_finished_attempt() {
    let trial = setup();
    let mut child = trial
        .command()
        .env("TRIAL_AGENT_SLEEP", "0.5")
        .args(["trial", ".workbenches/tb", "--reps", "3", "--parallel", "1", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let jobs = trial.world.home.join(".workbench/trials");
    let deadline = Instant::now() + Duration::from_secs(120);
    let id = loop {
        assert!(Instant::now() < deadline, "the trial never finished three attempts");
        let found = std::fs::read_dir(&jobs).ok().and_then(|mut e| e.next()).and_then(|e| e.ok());
        if let Some(entry) = found {
            let id = entry.file_name().to_string_lossy().into_owned();
            if let Ok(text) = std::fs::read_to_string(entry.path().join("job.json"))
                && let Ok(job) = serde_json::from_str::<Value>(&text)
                && job["attempts"].as_array().unwrap().iter().filter(|a| a["verdict"].is_string()).count() >= 3
            {
                break id;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let before = trial.job(&id);
    let finished: Vec<(String, Value)> = before["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["verdict"].is_string())
        .map(|a| (format!("{}/{}/{}", a["task"], a["arm"], a["rep"]), a["run_id"].clone()))
        .collect();

    let resumed = trial.wb(&["trial", "resume", &id]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let after = trial.job(&id);
    for (key, run) in &finished {
        let attempt = after["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| &format!("{}/{}/{}", a["task"], a["arm"], a["rep"]) == key)
            .unwrap();
        assert_eq!(&attempt["run_id"], run, "{key} was run again");
    }
    assert!(after["attempts"].as_array().unwrap().iter().all(|a| a["verdict"].is_string()), "{after:#}");
    // Twelve attempts, twelve runs: the one running when the trial was killed was followed, not started again.
    assert_eq!(trial.runs(), 12);
}

#[test]
fn max_cost_stops_admitting() {
    let trial = setup();
    let output = trial.wb(&["trial", ".workbenches/tb", "--reps", "3", "--parallel", "1", "--max-cost", "0.025"]);
    assert_eq!(output.code, 130, "{output:?}");
    assert!(output.stderr.contains("--max-cost was reached"), "{}", output.stderr);
    let job = trial.job(&job_id(&output));
    let done = job["attempts"].as_array().unwrap().iter().filter(|a| a["verdict"].is_string()).count();
    assert_eq!(done, 3, "{job:#}");
    assert_eq!(trial.runs(), 3, "no attempt started once the cap was reached");
}

#[test]
fn calibrate_flags_a_gate_the_untouched_fixture_passes() {
    let trial = setup();
    let package = trial.world.repo.join(".workbenches/tb");
    for (reference, answer) in [("expert", "fixed"), ("naive", "broken-but-close")] {
        let dir = package.join("trials/fix/references").join(reference);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("answer.txt"), format!("{answer}\n")).unwrap();
    }
    let good = trial.wb(&["trial", "calibrate", ".workbenches/tb", "--task", "fix"]);
    assert_eq!(good.code, 0, "{good:?}");
    assert_eq!(good.stdout.lines().filter(|l| l.starts_with("ok")).count(), 3, "{}", good.stdout);
    // `hello`'s gate passes on its empty fixture once the fixture holds the file: the gate checks nothing.
    std::fs::write(
        package.join("trials/hello/task.json"),
        std::fs::read_to_string(package.join("trials/hello/task.json"))
            .unwrap()
            .replace(r#"{"kind": "empty"}"#, r#"{"kind": "dir", "path": "fixture"}"#),
    )
    .unwrap();
    std::fs::write(package.join("trials/hello/fixture/hello.txt"), "already\n").unwrap();
    let flagged = trial.wb(&["trial", "calibrate", ".workbenches/tb", "--json"]);
    assert_eq!(flagged.code, 1, "{flagged:?}");
    let hello: Value = flagged
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["task"] == "hello")
        .unwrap();
    assert_eq!(hello["calibrations"][0]["ok"], false, "{hello}");
    assert!(hello["calibrations"][0]["problem"].as_str().unwrap().contains("untouched fixture"), "{hello}");
}

#[test]
fn a_batch_runs_one_task_per_line_and_resumes_what_could_not_start() {
    let trial = setup();
    // Two repositories here, worked on in place, and one cloned at a tag; the package from --workbench.
    let root = &trial.world.root;
    for name in ["one", "two"] {
        std::fs::create_dir_all(root.join(name)).unwrap();
        std::fs::write(root.join(name).join("README.md"), format!("# {name}\n")).unwrap();
    }
    let made = root.join("made");
    std::fs::create_dir_all(&made).unwrap();
    std::fs::write(made.join("README.md"), "upstream\n").unwrap();
    git(&made, &["init", "--quiet"]);
    git(&made, &["add", "."]);
    git(&made, &["commit", "--quiet", "-m", "upstream"]);
    git(&made, &["tag", "v1"]);
    let upstream = root.join("upstream");
    let items = root.join("items.jsonl");
    std::fs::write(
        &items,
        format!(
            "{{\"dir\": \"one\", \"task\": \"first\"}}\n{{\"id\": \"second\", \"dir\": \"two\", \"task\": \"second\"}}\n\
             {{\"id\": \"cloned\", \"git\": \"{}\", \"ref\": \"v1\", \"task\": \"third\"}}\n",
            upstream.display()
        ),
    )
    .unwrap();
    let repo_package = trial.world.repo.join(".workbenches/tb").display().to_string();
    let output = trial.wb(&["batch", items.to_str().unwrap(), "--workbench", &repo_package, "--parallel", "2"]);
    assert_eq!(output.code, 1, "the clone of a repository that is not there yet: {output:?}");
    let id =
        output.stderr.lines().find_map(|l| l.strip_prefix("batch ")).unwrap().split(':').next().unwrap().to_owned();
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(trial.job_dir(&id).join("results.json")).unwrap()).unwrap();
    let status = |results: &Value, id: &str| {
        results.as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()["status"].as_str().unwrap().to_owned()
    };
    assert_eq!(status(&results, "line-1"), "completed", "{results:#}");
    assert_eq!(status(&results, "second"), "completed");
    assert_eq!(status(&results, "cloned"), "infra_error");
    // The work is in the repositories (in place) and in each item's outcome; the table names them.
    assert_eq!(std::fs::read_to_string(root.join("one/answer.txt")).unwrap(), "fixed\n");
    for result in results.as_array().unwrap().iter().filter(|r| r["status"] == "completed") {
        assert!(result["outcome_id"].as_str().unwrap().starts_with("wbo_"), "{result}");
        assert_eq!(result["cost_usd"], 0.01);
    }
    assert!(output.stderr.contains("completed"), "{}", output.stderr);

    std::fs::rename(&made, &upstream).unwrap();
    let resumed = trial.wb(&["batch", "resume", &id, "--json"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(resumed.stderr.contains("1 of 3 items to run"), "{}", resumed.stderr);
    let last: Value = serde_json::from_str(resumed.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(status(&last["results"], "cloned"), "completed", "{last:#}");
    assert_eq!(trial.runs(), 3, "one run per item: the finished ones were not run again");

    // A bad line is named with its number, and nothing runs.
    std::fs::write(&items, "{\"dir\": \"one\", \"task\": \"x\"}\n{\"dir\": \"one\", \"task\": \"y\"}\n").unwrap();
    let refused = trial.wb(&["batch", items.to_str().unwrap()]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("items.jsonl:2: dir"), "{}", refused.stderr);
    assert_eq!(trial.runs(), 3);
}

/// The editor side: the manifest's lenses offer a trial; `workbench.trial` runs one with progress; the lens
/// then shows the latest trial's line, and opens its report through `window/showDocument`; `workbench.trials`
/// lists it.
#[test]
fn the_editor_runs_a_trial_and_its_lens_opens_the_report() {
    use wb_testsupport::lsp::{Client, uri};
    let trial = setup();
    let mut command = trial.command();
    command.arg("serve");
    let capabilities = json!({"window": {"workDoneProgress": true, "showDocument": {"support": true}}});
    let (mut client, _) = Client::start(command, &trial.world.repo, capabilities, json!({}));
    let manifest = trial.world.repo.join(".workbenches/tb/workbench.yml");
    let lenses = |client: &mut Client| -> Vec<Value> {
        let (lenses, _) = client.request("textDocument/codeLens", json!({"textDocument": {"uri": uri(&manifest)}}));
        lenses.as_array().unwrap().clone()
    };
    let titles: Vec<String> =
        lenses(&mut client).iter().map(|l| l["command"]["title"].as_str().unwrap().to_owned()).collect();
    assert!(titles.contains(&"⚗ Run trials".to_owned()), "{titles:?}");
    assert!(!titles.iter().any(|t| t.starts_with("trials")), "no trial yet: {titles:?}");

    client.send(&json!({"jsonrpc": "2.0", "id": 901, "method": "workspace/executeCommand", "params": {
        "command": "workbench.trial", "workDoneToken": "trial-1",
        "arguments": [{"uri": uri(&manifest), "reps": 1, "parallel": 2}]}}));
    let (answer, before) = client.response(901);
    let result = &answer["result"];
    assert_eq!(result["exitCode"], 0, "{answer}");
    assert_eq!((result["job"]["done"].as_u64(), result["job"]["works"].as_u64()), (Some(4), Some(3)), "{answer}");
    let reports: Vec<&str> = before
        .iter()
        .filter(|m| m["method"] == "$/progress" && m["params"]["value"]["kind"] == "report")
        .filter_map(|m| m["params"]["value"]["message"].as_str())
        .collect();
    assert!(reports.iter().any(|r| r.starts_with("4/4 · 3 works")), "{reports:?}");

    let latest =
        lenses(&mut client).into_iter().find(|l| l["command"]["command"] == "workbench.openTrialReport").unwrap();
    let title = latest["command"]["title"].as_str().unwrap();
    assert_eq!(title, "trials 1.0.0: 2/2 works · $0.01 per working result · just now");
    client.send(&json!({"jsonrpc": "2.0", "id": 902, "method": "workspace/executeCommand", "params": {
        "command": "workbench.openTrialReport", "arguments": latest["command"]["arguments"]}}));
    let (answer, before) = client.response(902);
    let report = answer["result"]["reportHtml"].as_str().unwrap().to_owned();
    assert!(report.ends_with("report.html") && Path::new(&report).is_file(), "{answer}");
    let shown = before.iter().find(|m| m["method"] == "window/showDocument").expect("the report shown");
    assert_eq!(shown["params"]["external"], true);
    assert!(shown["params"]["uri"].as_str().unwrap().ends_with("/report.html"), "{shown}");

    let (jobs, _) = client.request(
        "workspace/executeCommand",
        json!({"command": "workbench.trials",
        "arguments": [{"uri": uri(&manifest)}]}),
    );
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs}");
    assert_eq!(jobs[0]["summary"], title);
}

/// The agent in a Docker image (busybox): `fixed` only with the package's instruction staged; it searches the
/// whole container but the system directories (and `/usr`, where it lives) for a gate or a `trials` directory.
const DOCKER_AGENT: &str = r#"#!/bin/sh
if grep -rqs TRIAL-MARKER "$OPENCODE_CONFIG_DIR"; then echo fixed > answer.txt; else echo broken > answer.txt; fi
echo hello > hello.txt
seen=""
# Split, so this script (which the package's image context holds) is not itself a match.
secret="GATE-SECRET-""7f3a"
for dir in /*; do
  case "$dir" in /proc|/sys|/dev|/usr) continue ;; esac
  seen="$seen$(grep -rls "$secret" "$dir" 2>/dev/null | tr '\n' ' ')$(find "$dir" -type d -name trials 2>/dev/null | tr '\n' ' ')"
done
printf '{"type":"text","part":{"type":"text","text":"seen=[%s]"}}\n' "$seen"
printf '{"type":"step_finish","part":{"type":"step-finish","cost":0.01,"tokens":{"input":100,"output":20,"reasoning":0,"cache":{"read":0,"write":0}}}}\n'
"#;

/// The same trial on Docker: every attempt in a container of the package's image (built once), every gate in a
/// fresh container of it on the graded copy; the agent finds no gate and no `trials` directory in its container.
#[test]
fn a_trial_runs_in_docker_and_hides_the_gates() {
    use std::os::unix::fs::PermissionsExt;
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("docker tests skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return;
    }
    let trial = setup();
    let package = trial.world.repo.join(".workbenches/tb");
    let manifest = minimal(
        "tb",
        "opencode",
        "openai/gpt-5.1",
        "runtimes:\n  docker:\n    image:\n      build: ./image/Dockerfile\n      context: ./image\n",
    );
    std::fs::write(package.join("workbench.yml"), manifest).unwrap();
    let context = package.join("image");
    let (bin, local) = (context.join("rootfs/bin"), context.join("rootfs/usr/local/bin"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    std::fs::copy("/bin/busybox", bin.join("busybox")).expect("Debian's busybox-static (/bin/busybox)");
    for applet in ["sh", "grep", "find", "tr", "printf", "echo", "test", "cat", "ls", "id"] {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
    }
    std::fs::write(local.join("opencode"), DOCKER_AGENT).unwrap();
    std::fs::set_permissions(local.join("opencode"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(context.join("nonce.txt"), format!("{:?}-{}", Instant::now(), std::process::id())).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nCOPY nonce.txt /nonce.txt\nENV PATH=/usr/local/bin:/bin\n",
    )
    .unwrap();
    // A gate that only the package's image passes (its /nonce.txt): the gates run in its containers.
    std::fs::write(
        package.join("trials/hello/task.json"),
        r#"{"version": 1, "id": "hello", "title": "Task hello", "fixture": {"kind": "empty"},
  "gates": [{"id": "said", "run": "test -f hello.txt"}, {"id": "image", "run": "test -f /nonce.txt"}]}
"#,
    )
    .unwrap();
    let output = trial.wb(&["trial", ".workbenches/tb", "--runtime", "docker", "--parallel", "2"]);
    assert_eq!(output.code, 0, "{output:?}");
    let job = trial.job(&job_id(&output));
    for attempt in job["attempts"].as_array().unwrap() {
        let expected = if attempt["task"] == "fix" && attempt["arm"] == "plain" { "failed" } else { "works" };
        assert_eq!(attempt["verdict"], expected, "{attempt:#}");
        assert_eq!(attempt["cost_usd"], 0.01, "{attempt}");
        let log =
            trial.world.home.join(".workbench/runs").join(attempt["run_id"].as_str().unwrap()).join("events.ndjson");
        let seen = std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|event| event["data"]["text"].as_str().filter(|t| t.starts_with("seen=")).map(str::to_owned));
        assert_eq!(seen.as_deref(), Some("seen=[]"), "the agent found the tasks or a gate in its container");
        if attempt["task"] == "hello" {
            let gates: Vec<&Value> = attempt["gates"].as_array().unwrap().iter().collect();
            assert_eq!(gates.len(), 2, "{attempt:#}");
            assert!(gates.iter().all(|g| g["exit_code"] == 0), "the gates ran in the image: {attempt:#}");
        }
    }
    assert!(!Path::new("/nonce.txt").exists(), "the host has no /nonce.txt: only the image's containers pass");
}

/// `--against`: another version of the package as the second arm (v2 against v1). The older version, kept
/// outside the repository, lacks the instruction the `fix` task needs: only it fails there.
#[test]
fn a_trial_against_another_version_shows_what_changed() {
    let trial = setup();
    let older = trial.world.root.join("v1/.workbenches/tb");
    std::fs::create_dir_all(&older).unwrap();
    std::fs::write(older.join("workbench.yml"), minimal("tb", "opencode", "openai/gpt-5.1", "")).unwrap();
    std::fs::write(older.join("instructions.md"), "Be careful.\n").unwrap();
    let output = trial.wb(&["trial", ".workbenches/tb", "--against", older.to_str().unwrap()]);
    assert_eq!(output.code, 0, "{output:?}");
    let job = trial.job(&job_id(&output));
    assert_eq!(job["arms"], json!(["workbench", "against"]));
    for (task, arm, verdict) in verdicts(&job) {
        let expected = if task == "fix" && arm == "against" { "\"failed\"" } else { "\"works\"" };
        assert_eq!(verdict, expected, "{task} · {arm}: {job:#}");
    }
    let frozen = trial.job_dir(&job_id(&output)).join("packages/against/.workbenches/tb/instructions.md");
    assert_eq!(std::fs::read_to_string(frozen).unwrap(), "Be careful.\n", "the older version is frozen as it was");
    let refused = trial.wb(&["trial", ".workbenches/tb", "--arms", "workbench,against"]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(refused.stderr.contains("needs --against PATH"), "{}", refused.stderr);
}
