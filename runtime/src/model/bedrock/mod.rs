//! AWS Bedrock: chat through the Converse API ([`Bedrock`]), embeddings through `InvokeModel`
//! ([`BedrockEmbeddings`]), every request signed with Signature Version 4 ([`SigV4`]) or sent
//! with a Bedrock API key.
//!
//! What the clients share lives in one file of its own: where a request goes (the region's
//! `bedrock-runtime` endpoint, or one given), how it is authenticated, and how Bedrock's
//! failures (`x-amzn-ErrorType` names such as `ThrottlingException`) become [`ModelError`](crate::model::ModelError)s.

#[macro_use]
mod builders;

mod aws;
mod converse;
mod embeddings;
mod event_stream;
mod sigv4;

/// AWS credentials: an access key id, its secret, and for temporary credentials a session
/// token (the type of AWS's own SDK, so credentials its providers load can be passed as they are).
pub use aws_credential_types::Credentials as AwsCredentials;
pub use converse::Bedrock;
pub use embeddings::BedrockEmbeddings;
pub use sigv4::SigV4;
