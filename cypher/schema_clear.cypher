// Forget the look-ahead schema (a load changed the KG; remade when needed).
// In small transactions: a relation's schema can name every relation of
// the KG, and a deleted node's text counts against a capped transaction's
// memory (a thousand of 68 KB each were refused in one under 128 MB).
MATCH (s:TogSchema)
CALL (s) { DELETE s } IN TRANSACTIONS OF 50 ROWS
