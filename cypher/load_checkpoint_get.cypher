MATCH (l:TogLoad {source: $source}) RETURN properties(l) AS checkpoint
