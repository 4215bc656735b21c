// Forget a kept sample (made again when needed).
MATCH (s:TogSample {key: $key}) DELETE s
