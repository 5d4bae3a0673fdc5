//! [`Report`]: the error type for `main`, which prints an error's message instead of its
//! debug form.

use crate::error::BoxError;
use std::error::Error as StdError;
use std::fmt;

/// Any error, ready to be returned from `main`.
///
/// When `main` returns `Err(e)`, Rust prints `Error: ` and `e`'s `Debug` form. For the
/// errors of this crate that form is a struct dump (`InterruptWithoutThread { node: "b" }`)
/// that hides the message saying what to do. A `Report` prints the message instead, then
/// each underlying cause the message does not already quote:
///
/// ```text
/// Error: node `b` paused with an interrupt, but the run has no thread to resume later: pass `RunConfig::thread(id)`
/// ```
///
/// Every error type converts into it with `?`, and so do `String` and `&str`. (That blanket
/// conversion is why `Report` does not implement `std::error::Error` itself: it is where
/// errors end up, not one to wrap again.)
///
/// ```
/// use graphwright::prelude::*;
///
/// fn check(steps: u64) -> Result<(), Report> {
///     if steps > 10 {
///         return Err(format!("{steps} steps is too many").into());
///     }
///     let _ = "12".parse::<u64>()?;
///     Ok(())
/// }
///
/// let error = check(11).unwrap_err();
/// assert_eq!(format!("{error:?}"), "11 steps is too many");
/// ```
pub struct Report(BoxError);

impl Report {
    /// A report carrying a plain message.
    pub fn msg(message: impl fmt::Display) -> Self {
        Self(message.to_string().into())
    }

    /// The error, if it is an `E`.
    #[must_use]
    pub fn downcast_ref<E: StdError + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref()
    }

    /// The error this report carries.
    #[must_use]
    pub fn into_inner(self) -> BoxError {
        self.0
    }
}

impl<E> From<E> for Report
where
    E: Into<BoxError>,
{
    fn from(error: E) -> Self {
        Self(error.into())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The message, then the causes it does not already contain (many errors of this crate end
/// their message with their cause's text; printing it twice would read as two failures).
impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        f.write_str(&shown)?;
        let mut heading = false;
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let text = error.to_string();
            if !shown.contains(&text) {
                if !heading {
                    f.write_str("\n\nCaused by:")?;
                    heading = true;
                }
                write!(f, "\n    {text}")?;
                shown.push_str(&text);
            }
            cause = error.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Report;
    use crate::GraphError;

    #[derive(Debug, thiserror::Error)]
    #[error("could not load the profile")]
    struct Load(#[source] std::io::Error);

    #[test]
    fn debug_prints_the_message_not_the_struct() {
        let report = Report::from(GraphError::InterruptWithoutThread { node: "b".to_owned() });
        let printed = format!("{report:?}");
        assert!(printed.starts_with("node `b` paused with an interrupt"), "{printed}");
        assert!(printed.ends_with("pass `RunConfig::thread(id)`"), "{printed}");
        assert!(!printed.contains("InterruptWithoutThread"), "{printed}");
        assert!(report.downcast_ref::<GraphError>().is_some());
    }

    #[test]
    fn causes_are_listed_once_each() {
        let io = std::io::Error::other("disk full");
        let printed = format!("{:?}", Report::from(Load(io)));
        assert_eq!(printed, "could not load the profile\n\nCaused by:\n    disk full");

        let quoted = GraphError::Node { node: "save".to_owned(), step: 2, attempts: 1, source: "disk full".into() };
        let printed = format!("{:?}", Report::from(quoted));
        assert_eq!(
            printed, "node `save` failed in step 2 (attempt 1): disk full",
            "the cause is in the message already"
        );
    }

    #[test]
    fn messages_and_strings_convert() {
        assert_eq!(format!("{:?}", Report::msg("no answer")), "no answer");
        assert_eq!(Report::from("no answer").to_string(), "no answer");
        assert_eq!(Report::from(String::from("no answer")).into_inner().to_string(), "no answer");
    }
}
