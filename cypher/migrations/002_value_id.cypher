// One node per literal value, found by its N-Triples form.
CREATE CONSTRAINT tog_value_id IF NOT EXISTS FOR (v:Value) REQUIRE v.id IS UNIQUE
