"""Lab scaffolding: what a lab hands the learner to work with (a client, a table, an experiment),
one small module per lab that needs one. The checkers (``loaderlab.checks``) judge; these only
set the stage, so a lab imports them from here, not from its checker."""
