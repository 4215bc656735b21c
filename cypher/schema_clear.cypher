// Forget the look-ahead schema (a load changed the KG; remade when needed).
MATCH (s:TogSchema)
CALL (s) { DELETE s } IN TRANSACTIONS OF 10000 ROWS
