"""Request and response bodies (pydantic), and reading a body into one with 4xx answers for
malformed JSON and wrong types. pydantic evaluates the annotations when the classes are made,
so they are spelled as Python 3.9 evaluates them (Optional, Union; no postponed evaluation)."""

import json
from typing import Any, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import bad_request

Body = TypeVar("Body", bound=BaseModel)


def validation_message(error: ValidationError) -> str:
    """pydantic's errors as one line: 'inputs.0.shape: Input should be a valid list; ...'."""
    parts = []
    for each in error.errors()[:5]:
        where = ".".join(str(part) for part in each["loc"]) or "body"
        parts.append(f"{where}: {each['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def parse_json(body: bytes, model: type[Body]) -> Body:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise bad_request(f"the body is not valid JSON: {error}", code="invalid_json") from None
    return validate(data, model)


def validate(data: Any, model: type[Body]) -> Body:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise bad_request(f"invalid request: {validation_message(error)}",
                          code="invalid_request") from None


# ---- OpenAI ----


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "nxe"
    kind: str
    state: str
    idle_s: float
    resident_bytes: int


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class EmbeddingsRequest(BaseModel):
    """OpenAI's embeddings request; `input` is one text, texts, or token ids."""

    model_config = ConfigDict(extra="forbid")
    model: str
    input: Union[str, list[str], list[int], list[list[int]]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Optional[int] = Field(default=None, gt=0)
    user: Optional[str] = None

    def texts(self) -> Union[list[str], list[list[int]]]:
        """The inputs as a list: texts, or token-id lists."""
        if isinstance(self.input, str):
            return [self.input]
        if self.input and isinstance(self.input[0], int):
            return [self.input]  # one input given as token ids
        return self.input


class TranscriptionRequest(BaseModel):
    """OpenAI's transcription form, the audio file's bytes in `file`."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    model: str
    file: bytes
    filename: str = ""
    language: Optional[str] = None
    prompt: Optional[str] = None
    response_format: Literal["json", "text", "srt", "verbose_json", "vtt"] = "json"
    temperature: float = Field(default=0.0, ge=0.0, le=1.0)


# ---- Open Inference Protocol ----


class InferInput(BaseModel):
    name: str
    shape: list[int]
    datatype: str
    parameters: dict[str, Any] = {}
    data: Any = None


class InferOutputRequest(BaseModel):
    name: str
    parameters: dict[str, Any] = {}


class InferRequest(BaseModel):
    id: Optional[str] = None
    parameters: dict[str, Any] = {}
    inputs: list[InferInput]
    outputs: Optional[list[InferOutputRequest]] = None
