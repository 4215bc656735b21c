// [id, value, datatype, language, sample key] rows; returns [row index, node id] pairs.
UNWIND range(0, size($rows) - 1) AS i
WITH i, $rows[i] AS row
MERGE (v:Value {id: row[0]})
  ON CREATE SET v.value = row[1], v.datatype = row[2], v.lang = row[3], v.sk = row[4]
RETURN collect([i, id(v)]) AS ids
