"""Parameter fields shared by the reproductions' :class:`~shallowflow.reproductions.base.Params`
models, declared once: each type carries its allowed range and its usual one-line description.

Use a type as the field's annotation (``seed: Seed``); a field whose meaning is more specific in
one reproduction keeps the range and gives its own line (``seed: Seed = Field(description="base
seed")``).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field

# every paper
Seed = Annotated[int, Field(ge=0, description="seed of the initialisation")]
Runs = Annotated[int, Field(ge=1)]
LearningRate = Annotated[float, Field(gt=0, description="GD learning rate")]
Steps = Annotated[int, Field(gt=0, description="GD steps")]

# the initial scale and the records (Boursier-Flammarion, Town et al.)
NegativeLog10 = Annotated[float, Field(lt=0)]
"""A decimal log of a small initial scale (an item of a list of scales)."""
Log10Lambda = Annotated[float, Field(lt=0, description="decimal log of the initial scale lambda")]
AlignmentAngle = Annotated[float, Field(gt=0, lt=math.pi / 2,
                                        description="alignment angle (radians)")]
Frames = Annotated[int, Field(ge=2, description="most frames of the animation")]

# Town et al.
RecordDt = Annotated[float, Field(gt=0, description="record every this much flow time")]
Balance = Literal["free", "tied"]
"""The log-norm engine's balance ('free': plain GD up to rounding)."""
StopLoss = Annotated[float, Field(gt=0, description="early stop (and interpolation) loss threshold")]

# Min-Mallada-Vidal
HiddenWidth = Annotated[int, Field(ge=2, description="hidden neurons h")]
Alpha = Annotated[float, Field(gt=0, description="initial scale: W and v entries N(0, alpha^2)")]
Every = Annotated[int, Field(gt=0, description="iterations between snapshots")]
Reading = Literal["exponential-mean", "exponential-sum", "logistic-mean", "logistic-sum"]
"""A loss reading's name: (loss, reduction) of the MMV reproductions
(:data:`~shallowflow.reproductions.mmv.alignment_curves.READINGS`)."""
LossReading = Annotated[Reading, Field(description="loss reading (alignment_curves.READINGS)")]
