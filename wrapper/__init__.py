"""The IX Wrapper: holds the companion's behaviour and actions to the participant's preferences."""
