//! The studio page's files, apart from the routes that serve them, so that authentication and
//! authorization can tell them open without depending on the routes.

const HTML: &str = "text/html; charset=utf-8";
const SCRIPT: &str = "text/javascript; charset=utf-8";
const STYLE: &str = "text/css; charset=utf-8";

/// The page's files: the path each is served at, its content type and its text. The scripts
/// are ES modules that `app.js` imports.
pub(super) const FILES: [(&str, &str, &str); 7] = [
    ("/", HTML, include_str!("../../page/index.html")),
    ("/ui/style.css", STYLE, include_str!("../../page/style.css")),
    ("/ui/app.js", SCRIPT, include_str!("../../page/app.js")),
    ("/ui/api.js", SCRIPT, include_str!("../../page/api.js")),
    ("/ui/layout.js", SCRIPT, include_str!("../../page/layout.js")),
    ("/ui/graph.js", SCRIPT, include_str!("../../page/graph.js")),
    ("/ui/timeline.js", SCRIPT, include_str!("../../page/timeline.js")),
];

/// Whether `path` is one of the page's files, which anyone may read: they hold no data.
pub(crate) fn is_page_file(path: &str) -> bool {
    FILES.iter().any(|(served, ..)| *served == path)
}
