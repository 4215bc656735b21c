OPTIONAL MATCH (l:TogLoad {source: $source})
WITH properties(l) AS checkpoint
OPTIONAL MATCH (p:TogLoadPart {source: $source})
RETURN checkpoint, collect(properties(p)) AS parts
