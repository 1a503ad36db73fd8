//! Log setup: `tracing` to stderr, human-readable or JSON lines.
//!
//! What never reaches a log: query strings (they carry codes and state), `Authorization`,
//! `Cookie` and `Set-Cookie` headers, request bodies, and any token, secret, password or
//! code. Requests are logged by route template with a request id; see `http::serve_request`.
//! In JSON lines the request id is a top-level `request_id` field ([`RequestIdOnTop`]).
//!
//! Field values can carry what a client sent (a `client_id`, an address from
//! `X-Forwarded-For`), so in the human format every field value and message is written with
//! control characters escaped ([`EscapingFields`]): a CR, LF or terminal escape sequence from
//! a client can neither start a forged log line nor drive the operator's terminal. JSON lines
//! are escaped by JSON itself.

use std::fmt;

use serde::Deserialize;
use tracing::field::{Field, Visit};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Installs the global subscriber. A second call (tests starting several servers in one
/// process) leaves the first in place.
pub fn init(format: LogFormat, filter: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let _already_installed = match format {
        LogFormat::Human => builder.fmt_fields(EscapingFields).try_init(),
        LogFormat::Json => builder
            .json()
            .event_format(RequestIdOnTop(
                tracing_subscriber::fmt::format()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_target(false),
            ))
            .try_init(),
    };
}

/// The JSON line format with the request span's `request_id` copied to the top level of
/// every line logged inside a request, where log shippers index fields; the span stays
/// nested as `span`.
#[derive(Debug)]
pub struct RequestIdOnTop<F>(pub F);

impl<S, N, F> FormatEvent<S, N> for RequestIdOnTop<F>
where
    S: tracing::Subscriber + for<'lookup> LookupSpan<'lookup>,
    N: for<'writer> FormatFields<'writer> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> fmt::Result {
        let mut line = String::new();
        self.0
            .format_event(context, Writer::new(&mut line), event)?;
        writer.write_str(&with_request_id_on_top(&line))
    }
}

/// `line` (one JSON object and a newline) with `span.request_id` copied to `request_id`;
/// unchanged when it has none.
fn with_request_id_on_top(line: &str) -> String {
    let Ok(serde_json::Value::Object(mut object)) = serde_json::from_str(line.trim_end()) else {
        return line.to_owned();
    };
    let Some(request_id) = object
        .get("span")
        .and_then(|span| span.get("request_id"))
        .cloned()
    else {
        return line.to_owned();
    };
    object.entry("request_id").or_insert(request_id);
    let mut lifted = serde_json::Value::Object(object).to_string();
    lifted.push('\n');
    lifted
}

/// Formats the fields of events and spans as `name=value`, separated by spaces, with the
/// message first and bare, like the default human format, but with every control character
/// of a value escaped (see [`escape_into`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct EscapingFields;

impl<'writer> FormatFields<'writer> for EscapingFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        let mut visitor = EscapingVisitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct EscapingVisitor<'writer> {
    writer: Writer<'writer>,
    first: bool,
    result: fmt::Result,
}

impl EscapingVisitor<'_> {
    fn write(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        let separator = if self.first { "" } else { " " };
        self.first = false;
        self.result = if field.name() == "message" {
            self.writer.write_str(separator)
        } else {
            write!(self.writer, "{separator}{}=", field.name())
        }
        .and_then(|()| escape_into(&mut self.writer, value));
    }
}

impl Visit for EscapingVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.write(field, value);
        } else {
            // Quoted, as the default format writes string fields.
            self.write(field, &format!("{value:?}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here too, written by their `Display`, unescaped.
        self.write(field, &format!("{value:?}"));
    }
}

/// Writes `text` with every control character (C0, DEL, C1) and the Unicode line and
/// paragraph separators replaced by a visible escape: `\r`, `\n`, `\t`, or `\u{…}`.
pub fn escape_into(out: &mut impl fmt::Write, text: &str) -> fmt::Result {
    for character in text.chars() {
        match character {
            '\r' => out.write_str("\\r")?,
            '\n' => out.write_str("\\n")?,
            '\t' => out.write_str("\\t")?,
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                write!(out, "\\u{{{:x}}}", u32::from(c))?;
            }
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_id_is_lifted_to_the_top_of_a_json_line() {
        let line = "{\"level\":\"INFO\",\"span\":{\"request_id\":\"r-1\",\"method\":\"GET\"}}\n";
        let lifted: serde_json::Value =
            serde_json::from_str(&with_request_id_on_top(line)).unwrap();
        assert_eq!(lifted["request_id"], "r-1");
        assert_eq!(lifted["span"]["method"], "GET");
        let outside = "{\"level\":\"INFO\",\"message\":\"linkd serving\"}\n";
        assert_eq!(with_request_id_on_top(outside), outside);
    }

    #[test]
    fn control_characters_are_escaped() {
        let mut out = String::new();
        escape_into(&mut out, "a\r\nb\x1b[31mc\u{85}d\u{2028}é\t").unwrap_or_default();
        assert_eq!(out, "a\\r\\nb\\u{1b}[31mc\\u{85}d\\u{2028}é\\t");
    }
}
