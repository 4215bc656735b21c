// [id, value, datatype, language] rows.
UNWIND $rows AS row
MERGE (v:Value {id: row[0]})
  ON CREATE SET v.value = row[1], v.datatype = row[2], v.lang = row[3]
