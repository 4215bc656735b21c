// Put a fact with a literal object into the KG, marked with the correction that added it.
MERGE (s:Entity {id: $s})
  ON CREATE SET s.sk = $s_sk
MERGE (o:Value {id: $o})
  ON CREATE SET o.value = $value, o.datatype = $datatype, o.lang = $lang, o.sk = $o_sk
MERGE (s)-[r:$($r)]->(o)
SET r.tog_correction = $correction
