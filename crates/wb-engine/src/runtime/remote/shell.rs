//! Shell text sent to a sandbox: every value is single-quoted, so nothing a package or workspace names can
//! become syntax.

/// `'…'` quoting (a `'` inside becomes `'"'"'`).
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r#"'"'"'"#))
}

/// A command line from words, each quoted.
pub fn command_line(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// Git with the hardening the host's `workspace_git` uses, inside the sandbox: no hooks, no fsmonitor, a
/// fixed identity, no signing.
pub const GIT: &str = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c commit.gpgsign=false \
-c user.name=wb-lsp -c user.email=wb-lsp@localhost -c init.defaultBranch=main";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_survive_a_real_shell() {
        let tricky = "it's $(rm -rf /) `x` \"y\" \\ ; done";
        let output = std::process::Command::new("sh").arg("-c").arg(format!("printf %s {}", quote(tricky))).output();
        assert_eq!(output.ok().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).as_deref(), Some(tricky));
    }
}
