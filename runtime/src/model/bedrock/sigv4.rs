//! AWS Signature Version 4, through AWS's own signer (`aws-sigv4`).

use crate::model::ModelError;
use aws_credential_types::Credentials as AwsCredentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use std::time::SystemTime;

/// Signs HTTP requests with AWS Signature Version 4, as [`Bedrock`](super::Bedrock) and
/// [`BedrockEmbeddings`](super::BedrockEmbeddings) sign theirs: the headers to add to a
/// request so that an AWS service accepts it as made by the holder of `credentials`.
///
/// The canonical request, the string to sign and the key derivation are `aws-sigv4`'s, the
/// signer of AWS's own Rust SDK; this type picks its settings (the signature in headers, the
/// path encoded twice as every service but S3 expects, the session token signed) and turns its
/// failures into [`ModelError::Config`]. Checked here against AWS's published `get-vanilla`
/// test vector:
///
/// ```
/// use graphwright::model::{AwsCredentials, SigV4};
/// use std::time::{Duration, UNIX_EPOCH};
///
/// let key = AwsCredentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None, None, "example");
/// let signer = SigV4::new(key, "us-east-1", "service");
/// let at = UNIX_EPOCH + Duration::from_secs(1_440_938_160); // 2015-08-30T12:36:00Z
/// let headers = signer.sign("GET", "https://example.amazonaws.com/", &[], b"", at)?;
/// let header = |name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str());
/// assert_eq!(header("x-amz-date"), Some("20150830T123600Z"));
/// assert_eq!(
///     header("authorization"),
///     Some(
///         "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
///          SignedHeaders=host;x-amz-date, \
///          Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
///     )
/// );
/// # Ok::<(), graphwright::model::ModelError>(())
/// ```
#[derive(Clone)]
pub struct SigV4 {
    credentials: AwsCredentials,
    region: String,
    service: String,
}

impl SigV4 {
    /// A signer for requests to `service` (its signing name: `bedrock` for Bedrock) in
    /// `region`, as the holder of `credentials`.
    pub fn new(credentials: AwsCredentials, region: impl Into<String>, service: impl Into<String>) -> Self {
        Self { credentials, region: region.into(), service: service.into() }
    }

    /// The headers that sign a request of `method` to `url` with `headers` and `body`, made at
    /// `at`: `authorization`, `x-amz-date`, and `x-amz-security-token` when the credentials
    /// carry a session token. The `host` header is the URL's; every header in `headers` is
    /// signed, so send them exactly as given.
    pub fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        at: SystemTime,
    ) -> Result<Vec<(&'static str, String)>, ModelError> {
        let failed =
            |e: &dyn std::fmt::Display| ModelError::Config(format!("could not sign the request to {url}: {e}"));
        let identity = self.credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(&self.service)
            .time(at)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| failed(&e))?
            .into();
        let request = SignableRequest::new(method, url, headers.iter().copied(), SignableBody::Bytes(body))
            .map_err(|e| failed(&e))?;
        let (instructions, _signature) = sign(request, &params).map_err(|e| failed(&e))?.into_parts();
        let (signed, _query) = instructions.into_parts();
        Ok(signed.into_iter().map(|header| (header.name(), header.value().to_owned())).collect())
    }
}

impl std::fmt::Debug for SigV4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigV4")
            .field("credentials", &"[redacted]")
            .field("region", &self.region)
            .field("service", &self.service)
            .finish()
    }
}
