// Forget kept samples (made again when needed).
UNWIND $keys AS key
MATCH (s:TogSample {key: key}) DELETE s
