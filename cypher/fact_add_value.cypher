// Put a fact with a literal object into the KG, marked with the correction that added it
// (the type named in the text, as in fact_exists: MERGE looks for the edge first).
MERGE (s:Entity {id: $s})
  ON CREATE SET s.sk = $s_sk
MERGE (o:Value {id: $o})
  ON CREATE SET o.value = $value, o.datatype = $datatype, o.lang = $lang, o.sk = $o_sk
MERGE (s)-[r:{{type}}]->(o)
SET r.tog_correction = $correction
