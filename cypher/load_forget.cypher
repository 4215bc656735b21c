// Forget a source's checkpoint and its name keys (before loading it again).
CALL () { MATCH (l:TogLoad {source: $source}) DELETE l }
CALL () { MATCH (n:TogName {source: $source}) DELETE n }
