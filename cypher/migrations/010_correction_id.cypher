// Corrections of the KG, with their provenance.
CREATE CONSTRAINT tog_correction_id IF NOT EXISTS FOR (c:TogCorrection) REQUIRE c.id IS UNIQUE
