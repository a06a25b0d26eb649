"""Lab scaffolding: what a lab hands the learner to work with (a client, a table, an experiment),
one small module per lab that needs one, named by the lab: ``loaderlab.labs.labNN``. The checkers
(``loaderlab.checks.labNN``) judge; these only set the stage, so a lab imports them from here, not
from its checker."""
