MERGE (l:TogLoad {source: $source}) SET l += $values
