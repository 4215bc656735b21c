// Put typed values in their stored form: [old id, new id, value, sample key]
// rows, whose new ids name no node yet.
UNWIND $rows AS row
MATCH (v:Value {id: row[0]})
SET v.id = row[1], v.value = row[2], v.sk = row[3]
