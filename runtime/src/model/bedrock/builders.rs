//! The builder methods both Bedrock clients share, made by [`aws_builders!`] for each: the
//! clients keep the same `aws` and `conn` fields, so one macro writes them once.

/// The builders both Bedrock clients share: where requests go and how they are authorised.
macro_rules! aws_builders {
    ($client:ty) => {
        impl $client {
            /// The AWS region (`us-east-1`): where requests go, and what they are signed for.
            #[must_use]
            pub fn region(mut self, region: impl Into<String>) -> Self {
                self.aws.region = Some(region.into());
                self
            }

            /// The AWS credentials to sign requests with, instead of the environment's (and instead of
            /// an API key).
            #[must_use]
            pub fn credentials(mut self, credentials: AwsCredentials) -> Self {
                self.aws.credentials = Some(credentials);
                self.conn.api_key = None;
                self
            }

            /// A Bedrock API key, sent as `Authorization: Bearer` instead of a signature.
            #[must_use]
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.conn.api_key = Some(key.into());
                self
            }

            /// Where requests go instead of the region's endpoint (`https://vpce-....bedrock-runtime.
            /// us-east-1.vpce.amazonaws.com`, a proxy, a test server): the URL that `/model/...` follows.
            #[must_use]
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.conn.base_url = url.into();
                self
            }
        }
    };
}
