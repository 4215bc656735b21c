// [key, entity] rows of the linking index, tagged with their source file.
UNWIND $rows AS row
MERGE (n:TogName {key: row[0], entity: row[1]})
  ON CREATE SET n.source = $source
