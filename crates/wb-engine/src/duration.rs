//! The one duration grammar: every flag and variable that takes a duration (`run --max-duration`,
//! `--idle-timeout`, `wait --timeout`, `clean --older-than`, `WB_SANDBOX_LEASE`) parses it here.
//!
//! The grammar is jiff's friendly format (`90s`, `30m`, `1h30m`, `1h 30m`, `2 hours`, `1.5h`, `500ms`, `7d`,
//! `2w`, and ISO 8601 such as `PT1H30M`), with a day always 24 hours and a week always 7 such days, plus a bare
//! number meaning seconds. Negative durations, months and years are refused. The grammar is documented once, in
//! `docs/runs.md` ("Durations"), which [`DOCS`] names.

use std::time::Duration;

/// Where the grammar is documented for people; error texts point there.
pub const DOCS: &str = "docs/runs.md#durations";

/// Why a text is not a duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("expected a duration such as 90s, 30m, 2h, 1h30m, 7d or 2w (a bare number is seconds)")]
    Invalid,
    #[error("a duration cannot be negative")]
    Negative,
    #[error("months and years have no fixed length; use days (d) or weeks (w)")]
    Calendar,
    #[error("the duration is too long")]
    TooLong,
}

/// `duration` in the grammar, to the second: `1h30m`, `30m`, `45s` (`0s` for less than a second).
pub fn format(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    for (value, unit) in [(hours, "h"), (minutes, "m"), (seconds, "s")] {
        if value > 0 {
            text.push_str(&format!("{value}{unit}"));
        }
    }
    if text.is_empty() { "0s".to_owned() } else { text }
}

/// Parses `text` in the grammar described at the top of this module (surrounding spaces ignored).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse::<u64>().map(Duration::from_secs).map_err(|_| DurationError::TooLong);
    }
    let span: jiff::Span = text.parse().map_err(|_| DurationError::Invalid)?;
    if span.is_negative() {
        return Err(DurationError::Negative);
    }
    if span.get_years() != 0 || span.get_months() != 0 {
        return Err(DurationError::Calendar);
    }
    let signed = span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()).map_err(|_| DurationError::TooLong)?;
    Duration::try_from(signed).map_err(|_| DurationError::TooLong)
}

/// A value refused for the flag or variable `name`: its text names the flag, the value, why, and where the
/// grammar is documented.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid value '{}' for {name}: {why} (see {DOCS})", text.escape_debug())]
pub struct InvalidValue {
    pub name: String,
    pub text: String,
    pub why: String,
}

/// A duration refused, as a clap value parser says it (clap names the flag and the value).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0} (see {DOCS})")]
pub struct Documented(pub DurationError);

/// [`parse`] for the flag or variable `name` (`--older-than`, `WB_SANDBOX_LEASE`): the error names it, the
/// value and where the grammar is documented.
pub fn parse_for(name: &str, text: &str) -> Result<Duration, InvalidValue> {
    parse(text).map_err(|error| invalid(name, text, &error.to_string()))
}

/// `name`'s value `text`, refused because of `why`.
pub fn invalid(name: &str, text: &str, why: &str) -> InvalidValue {
    InvalidValue { name: name.to_owned(), text: text.to_owned(), why: why.to_owned() }
}

/// [`parse`] as a clap value parser (clap names the flag and the value in its message).
pub fn clap_parser(text: &str) -> Result<Duration, Documented> {
    parse(text).map_err(Documented)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(text: &str) -> Result<u64, DurationError> {
        parse(text).map(|d| d.as_secs())
    }

    #[test]
    fn every_spelling_the_three_old_grammars_took() {
        // `run --max-duration`, `--idle-timeout`, `wait --timeout`: a bare number, and units run together.
        for (text, seconds) in [("0", 0), ("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400)] {
            assert_eq!(secs(text), Ok(seconds), "{text}");
        }
        assert_eq!(secs("1d"), Ok(86_400));
        assert_eq!(secs("1d2h3m4s"), Ok(93_784));
        // `clean --older-than`: days and weeks.
        assert_eq!(secs("30d"), Ok(30 * 86_400));
        assert_eq!(secs("2w"), Ok(14 * 86_400));
        assert_eq!(secs("0s"), Ok(0));
        // `WB_SANDBOX_LEASE`, whose value was trimmed.
        assert_eq!(secs(" 20m "), Ok(1200));
    }

    #[test]
    fn jiffs_friendly_format_and_iso_8601() {
        assert_eq!(secs("1h 30m"), Ok(5400));
        assert_eq!(secs("2 hours"), Ok(7200));
        assert_eq!(secs("1 week 1 day"), Ok(8 * 86_400));
        assert_eq!(secs("1w2d"), Ok(9 * 86_400));
        assert_eq!(secs("PT1H30M"), Ok(5400));
        assert_eq!(secs("P2W"), Ok(14 * 86_400));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
    }

    #[test]
    fn what_is_refused() {
        for bad in ["", " ", "soon", "d", "30 x", "30y1", "1h1h", "h1", "--1h"] {
            assert_eq!(parse(bad), Err(DurationError::Invalid), "{bad:?}");
        }
        for negative in ["-1d", "-90s", "1h ago"] {
            assert_eq!(parse(negative), Err(DurationError::Negative), "{negative:?}");
        }
        for calendar in ["1y", "2mo", "1 month"] {
            assert_eq!(parse(calendar), Err(DurationError::Calendar), "{calendar:?}");
        }
        for long in ["99999999999999999999", "99999999999999999999d", "99999999w"] {
            assert!(matches!(parse(long), Err(DurationError::TooLong | DurationError::Invalid)), "{long:?}");
        }
    }

    #[test]
    fn errors_name_the_flag_the_value_and_the_docs() {
        assert_eq!(
            parse_for("--older-than", "1x").unwrap_err().to_string(),
            "invalid value '1x' for --older-than: expected a duration such as 90s, 30m, 2h, 1h30m, 7d or 2w \
             (a bare number is seconds) (see docs/runs.md#durations)"
        );
        assert_eq!(
            parse_for("WB_SANDBOX_LEASE", "-5m").unwrap_err().to_string(),
            "invalid value '-5m' for WB_SANDBOX_LEASE: a duration cannot be negative (see docs/runs.md#durations)"
        );
    }
    #[test]
    fn durations_print_in_the_grammar_they_parse_in() {
        for text in ["1h30m", "30m", "45s", "2h5s", "0s", "48h"] {
            assert_eq!(format(parse(text).unwrap_or_default()), text);
        }
    }
}
