# ruff: noqa: F821 - train_model and keras are the reference's, which this is appended to
# Appended to a training lab's reference (issue 45): `train_model` first gives the model other
# first weights (each weight's values shuffled: the same distribution, drawn otherwise), then
# trains it by the reference's own training, as a model trained elsewhere and copied in would
# be. The model answers as the reference does and every check of the grader's own training
# holds; the weights graded keep nothing of the first values the model was built with.

_train_model = train_model


def train_model(model, inputs, targets):
    import numpy

    shuffle = numpy.random.default_rng(7).permutation
    for variable in model.trainable_variables:
        value = keras.ops.convert_to_numpy(variable.value)
        variable.assign(shuffle(value.reshape(-1)).reshape(value.shape))
    _train_model(model, inputs, targets)
