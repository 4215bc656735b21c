// Forget a source's checkpoint, its parts and its name keys (before loading it again).
CALL () { MATCH (l:TogLoad {source: $source}) DELETE l }
CALL () { MATCH (p:TogLoadPart {source: $source}) DELETE p }
CALL () { MATCH (n:TogName {source: $source}) DELETE n }
