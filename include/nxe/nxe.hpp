/* nxe.hpp — header-only C++17 wrappers of the C API in nxe.h (since 0.10).
 *
 * Every object of the C API has a move-only owner here that releases it (Context, Graph,
 * Executable, Binding); handles the C API does not release on their own (a graph's tensors and
 * ops) are plain copyable views (Tensor, Op) valid while their graph lives. A failing call
 * throws nxe::Error, which carries the nxe_status code and the message of nxe_last_error();
 * a moved-from owner holds nothing, and using it throws the C API's NXE_ERROR_INVALID_ARGUMENT
 * for a NULL handle. Nothing else is added to the C API's semantics: the thread rules, the
 * lifetimes and the status codes of nxe.h hold (e.g. an Executable may run from several threads
 * at once, a Binding from one at a time, and an Executable outlives its Bindings).
 *
 * Module runs an executable in the manner of a virtual machine's function: Run on NDArrays
 * returns owned output arrays (copied out), RunNoCopy returns views of the executable's result
 * area (valid until the calling thread's next run), CreateInput returns a view of an input slot
 * in the staging buffer that runs read in place, and Bind ties caller buffers to the inputs and
 * outputs (nothing copied; see "Bound caller memory" in nxe.h).
 *
 *   nxe::Context ctx;
 *   nxe::Graph g(ctx);
 *   nxe::Tensor x = g.Input("x", NXE_DTYPE_F32, {2, 3});
 *   nxe::Tensor y = g.Output("y");
 *   g.AddOp("Relu", {x}, {y});
 *   nxe::Module m(g.Compile());
 *   nxe::NDArray in = nxe::NDArray::Empty(NXE_DTYPE_F32, {2, 3});
 *   std::vector<nxe::NDArray> out = m.Run({in});
 */
#ifndef NXE_NXE_HPP
#define NXE_NXE_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nxe.h"

namespace nxe
{

/* A failed call: the status code and the library's message. */
class Error : public std::runtime_error
{
  public:
    Error(nxe_status status, const std::string &message)
        : std::runtime_error(std::string(nxe_status_name(status)) + ": " + message),
          status_(status), message_(message)
    {
    }
    nxe_status status() const noexcept
    {
        return status_;
    }
    /* The message without the status name. */
    const std::string &message() const noexcept
    {
        return message_;
    }

  private:
    nxe_status status_;
    std::string message_;
};

/* Throws nxe::Error for a failed status, with this thread's last error message. */
inline void Check(nxe_status status)
{
    if (status != NXE_OK)
        throw Error(status, nxe_last_error());
}

namespace detail
{

/* Owns one C object; move-only; releases it with Release. */
template <typename T, void (*Release)(T *)> class Handle
{
  public:
    Handle() noexcept = default;
    explicit Handle(T *raw) noexcept : raw_(raw)
    {
    }
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    Handle(Handle &&other) noexcept : raw_(std::exchange(other.raw_, nullptr))
    {
    }
    Handle &operator=(Handle &&other) noexcept
    {
        if (this != &other)
            reset(std::exchange(other.raw_, nullptr));
        return *this;
    }
    ~Handle()
    {
        reset(nullptr);
    }
    T *get() const noexcept
    {
        return raw_;
    }
    void reset(T *raw) noexcept
    {
        if (raw_)
            Release(raw_);
        raw_ = raw;
    }

  private:
    T *raw_ = nullptr;
};

inline void ReleaseContext(nxe_context *p)
{
    nxe_context_release(p);
}
inline void ReleaseGraph(nxe_graph *p)
{
    nxe_graph_release(p);
}
inline void ReleaseExecutable(nxe_executable *p)
{
    nxe_executable_release(p);
}
inline void ReleaseBinding(nxe_binding *p)
{
    nxe_binding_release(p);
}

} // namespace detail

/* The nxe_dtype of a C++ element type. */
template <typename T> constexpr int32_t DTypeOf();
template <> constexpr int32_t DTypeOf<float>()
{
    return NXE_DTYPE_F32;
}
template <> constexpr int32_t DTypeOf<double>()
{
    return NXE_DTYPE_F64;
}
template <> constexpr int32_t DTypeOf<int8_t>()
{
    return NXE_DTYPE_I8;
}
template <> constexpr int32_t DTypeOf<uint8_t>()
{
    return NXE_DTYPE_U8;
}
template <> constexpr int32_t DTypeOf<int16_t>()
{
    return NXE_DTYPE_I16;
}
template <> constexpr int32_t DTypeOf<uint16_t>()
{
    return NXE_DTYPE_U16;
}
template <> constexpr int32_t DTypeOf<int32_t>()
{
    return NXE_DTYPE_I32;
}
template <> constexpr int32_t DTypeOf<uint32_t>()
{
    return NXE_DTYPE_U32;
}
template <> constexpr int32_t DTypeOf<int64_t>()
{
    return NXE_DTYPE_I64;
}
template <> constexpr int32_t DTypeOf<uint64_t>()
{
    return NXE_DTYPE_U64;
}

/* Bytes of one element of `dtype`; throws for a value that is not a dtype. */
inline size_t DTypeSize(int32_t dtype)
{
    int32_t size = 0;
    Check(nxe_dtype_info(dtype, nullptr, &size));
    return static_cast<size_t>(size);
}

/* A descriptor of `bytes` at `data` holding a dense `dtype` tensor of `shape`. */
inline nxe_tensor_desc MakeDesc(void *data, size_t bytes, int32_t dtype,
                                const std::vector<int64_t> &shape)
{
    if (shape.size() > NXE_MAX_RANK)
        throw Error(NXE_ERROR_INVALID_ARGUMENT,
                    "rank " + std::to_string(shape.size()) + " is above NXE_MAX_RANK");
    nxe_tensor_desc desc{};
    desc.data = data;
    desc.data_size = bytes;
    desc.ndim = static_cast<int32_t>(shape.size());
    Check(nxe_dtype_to_dlpack(dtype, &desc.dtype_code, &desc.dtype_bits));
    for (size_t i = 0; i < shape.size(); i++)
        desc.shape[i] = shape[i];
    return desc;
}

/* A dense tensor value on the host: owning 64-byte aligned memory (Empty, FromVector), or
 * viewing memory it does not own (View, and what RunNoCopy and CreateInput return). Move-only
 * when owning; copying a view copies the view. */
class NDArray
{
  public:
    NDArray() = default;

    static NDArray Empty(int32_t dtype, std::vector<int64_t> shape)
    {
        NDArray a;
        a.dtype_ = dtype;
        a.shape_ = std::move(shape);
        a.bytes_ = DTypeSize(dtype) * a.NumElements();
        a.owned_.reset(static_cast<std::byte *>(
            ::operator new(a.bytes_ > 0 ? a.bytes_ : 1, std::align_val_t{kAlignment})));
        std::memset(a.owned_.get(), 0, a.bytes_);
        a.data_ = a.owned_.get();
        return a;
    }

    template <typename T>
    static NDArray FromVector(const std::vector<T> &values, std::vector<int64_t> shape)
    {
        NDArray a = Empty(DTypeOf<T>(), std::move(shape));
        if (values.size() != a.NumElements())
            throw Error(NXE_ERROR_SHAPE_MISMATCH,
                        std::to_string(values.size()) + " values for a shape of " +
                            std::to_string(a.NumElements()) + " elements");
        std::memcpy(a.data_, values.data(), a.bytes_);
        return a;
    }

    /* Memory the caller keeps alive while the view is used. */
    static NDArray View(void *data, int32_t dtype, std::vector<int64_t> shape)
    {
        NDArray a;
        a.dtype_ = dtype;
        a.shape_ = std::move(shape);
        a.bytes_ = DTypeSize(dtype) * a.NumElements();
        a.data_ = data;
        return a;
    }

    static NDArray FromDesc(const nxe_tensor_desc &desc)
    {
        int32_t dtype = NXE_DTYPE_NONE;
        Check(nxe_dtype_from_dlpack(desc.dtype_code, desc.dtype_bits, &dtype));
        return View(desc.data, dtype, std::vector<int64_t>(desc.shape, desc.shape + desc.ndim));
    }

    NDArray(NDArray &&) noexcept = default;
    NDArray &operator=(NDArray &&) noexcept = default;
    NDArray(const NDArray &other) = delete;
    NDArray &operator=(const NDArray &) = delete;

    int32_t dtype() const noexcept
    {
        return dtype_;
    }
    const std::vector<int64_t> &shape() const noexcept
    {
        return shape_;
    }
    size_t bytes() const noexcept
    {
        return bytes_;
    }
    bool owns_memory() const noexcept
    {
        return owned_ != nullptr;
    }
    void *data() const noexcept
    {
        return data_;
    }
    size_t NumElements() const noexcept
    {
        size_t n = 1;
        for (int64_t d : shape_)
            n *= static_cast<size_t>(d);
        return n;
    }

    /* The elements as T; throws NXE_ERROR_DTYPE_MISMATCH when T is not the dtype. */
    template <typename T> T *Data() const
    {
        if (DTypeOf<T>() != dtype_)
            throw Error(NXE_ERROR_DTYPE_MISMATCH, "the array is not of the requested type");
        return static_cast<T *>(data_);
    }
    template <typename T> std::vector<T> ToVector() const
    {
        const T *p = Data<T>();
        return std::vector<T>(p, p + NumElements());
    }

    nxe_tensor_desc Desc() const
    {
        return MakeDesc(data_, bytes_, dtype_, shape_);
    }

  private:
    static constexpr size_t kAlignment = 64;
    struct AlignedDelete {
        void operator()(std::byte *p) const noexcept
        {
            ::operator delete(p, std::align_val_t{kAlignment});
        }
    };
    int32_t dtype_ = NXE_DTYPE_NONE;
    std::vector<int64_t> shape_;
    size_t bytes_ = 0;
    void *data_ = nullptr;
    std::unique_ptr<std::byte, AlignedDelete> owned_;
};

/* A context: limits and the ops its graphs may use. */
class Context
{
  public:
    Context()
    {
        nxe_context *raw = nullptr;
        Check(nxe_context_create(&raw));
        handle_.reset(raw);
    }
    nxe_context *get() const noexcept
    {
        return handle_.get();
    }
    void SetLimits(const nxe_limits &limits)
    {
        Check(nxe_context_set_limits(get(), &limits));
    }

  private:
    detail::Handle<nxe_context, detail::ReleaseContext> handle_;
};

/* A tensor of a graph: a view, valid while the graph lives. */
class Tensor
{
  public:
    Tensor() = default;
    explicit Tensor(nxe_tensor *raw) noexcept : raw_(raw)
    {
    }
    nxe_tensor *get() const noexcept
    {
        return raw_;
    }

    void SetName(const std::string &name)
    {
        Check(nxe_tensor_set_name(raw_, name.c_str()));
    }
    void SetKind(int32_t kind)
    {
        Check(nxe_tensor_set_kind(raw_, kind));
    }
    void SetShape(const std::vector<int64_t> &shape)
    {
        Check(nxe_tensor_set_shape(raw_, static_cast<int32_t>(shape.size()), shape.data()));
    }
    void SetData(const void *data, size_t bytes)
    {
        Check(nxe_tensor_set_data(raw_, data, bytes));
    }
    template <typename T> void SetData(const std::vector<T> &values)
    {
        SetData(values.data(), values.size() * sizeof(T));
    }
    nxe_tensor_info Info() const
    {
        nxe_tensor_info info{};
        info.struct_size = sizeof info;
        Check(nxe_tensor_get_info(raw_, &info));
        return info;
    }

  private:
    nxe_tensor *raw_ = nullptr;
};

/* An op of a graph: a view, valid while the graph lives. */
class Op
{
  public:
    Op() = default;
    explicit Op(nxe_op *raw) noexcept : raw_(raw)
    {
    }
    nxe_op *get() const noexcept
    {
        return raw_;
    }

    Op &Attr(const char *name, int64_t value)
    {
        Check(nxe_op_set_attr_int(raw_, name, value));
        return *this;
    }
    Op &Attr(const char *name, double value)
    {
        Check(nxe_op_set_attr_float(raw_, name, value));
        return *this;
    }
    Op &Attr(const char *name, const std::string &value)
    {
        Check(nxe_op_set_attr_string(raw_, name, value.c_str()));
        return *this;
    }
    Op &Attr(const char *name, const std::vector<int64_t> &values)
    {
        Check(nxe_op_set_attr_ints(raw_, name, values.data(), static_cast<int32_t>(values.size())));
        return *this;
    }
    Op &Attr(const char *name, const std::vector<float> &values)
    {
        Check(
            nxe_op_set_attr_floats(raw_, name, values.data(), static_cast<int32_t>(values.size())));
        return *this;
    }
    /* A default Tensor() leaves an optional input absent. */
    void BindInputs(const std::vector<Tensor> &tensors)
    {
        Bind(tensors, nxe_op_bind_inputs);
    }
    void BindOutputs(const std::vector<Tensor> &tensors)
    {
        Bind(tensors, nxe_op_bind_outputs);
    }

  private:
    void Bind(const std::vector<Tensor> &tensors,
              nxe_status (*bind)(nxe_op *, nxe_tensor *const *, int32_t))
    {
        std::vector<nxe_tensor *> raw;
        raw.reserve(tensors.size());
        for (const Tensor &t : tensors)
            raw.push_back(t.get());
        Check(bind(raw_, raw.data(), static_cast<int32_t>(raw.size())));
    }
    nxe_op *raw_ = nullptr;
};

class Executable;

/* Caller buffers bound to an executable's inputs and outputs (nxe_binding): Run reads the
 * inputs and writes the outputs in place. The executable must outlive it. */
class Binding
{
  public:
    explicit Binding(const Executable &exe);
    nxe_binding *get() const noexcept
    {
        return handle_.get();
    }

    void BindInput(int32_t index, const nxe_tensor_desc &desc)
    {
        Check(nxe_binding_bind_input(get(), index, &desc));
    }
    void BindOutput(int32_t index, const nxe_tensor_desc &desc)
    {
        Check(nxe_binding_bind_output(get(), index, &desc));
    }
    /* The array's memory must stay valid while bound. */
    void BindInput(int32_t index, const NDArray &array)
    {
        BindInput(index, array.Desc());
    }
    void BindOutput(int32_t index, const NDArray &array)
    {
        BindOutput(index, array.Desc());
    }
    void Clear()
    {
        Check(nxe_binding_clear(get()));
    }
    void Run()
    {
        Check(nxe_binding_run(get()));
    }

  private:
    detail::Handle<nxe_binding, detail::ReleaseBinding> handle_;
};

/* A compiled (or loaded) executable. */
class Executable
{
  public:
    Executable() = default;
    explicit Executable(nxe_executable *raw) noexcept : handle_(raw)
    {
    }
    nxe_executable *get() const noexcept
    {
        return handle_.get();
    }

    static Executable LoadFile(const std::string &path, const nxe_load_options *options = nullptr)
    {
        nxe_executable *raw = nullptr;
        Check(nxe_executable_load_file(path.c_str(), options, &raw));
        return Executable(raw);
    }
    static Executable LoadMemory(const void *data, size_t size,
                                 const nxe_load_options *options = nullptr)
    {
        nxe_executable *raw = nullptr;
        Check(nxe_executable_load_memory(data, size, options, &raw));
        return Executable(raw);
    }

    int32_t NumInputs() const
    {
        return Counts().first;
    }
    int32_t NumOutputs() const
    {
        return Counts().second;
    }
    nxe_tensor_desc InputDesc(int32_t index) const
    {
        nxe_tensor_desc desc{};
        Check(nxe_executable_input_desc(get(), index, &desc, nullptr));
        return desc;
    }
    nxe_tensor_desc OutputDesc(int32_t index) const
    {
        nxe_tensor_desc desc{};
        Check(nxe_executable_output_desc(get(), index, &desc, nullptr));
        return desc;
    }
    std::string InputName(int32_t index) const
    {
        nxe_tensor_desc desc{};
        const char *name = nullptr;
        Check(nxe_executable_input_desc(get(), index, &desc, &name));
        return name ? name : "";
    }
    std::string OutputName(int32_t index) const
    {
        nxe_tensor_desc desc{};
        const char *name = nullptr;
        Check(nxe_executable_output_desc(get(), index, &desc, &name));
        return name ? name : "";
    }

    void Run(const std::vector<nxe_tensor_desc> &inputs, std::vector<nxe_tensor_desc> &outputs)
    {
        Check(nxe_executable_run(get(), inputs.data(), static_cast<int32_t>(inputs.size()),
                                 outputs.data(), static_cast<int32_t>(outputs.size())));
    }
    std::vector<nxe_tensor_desc> RunNoCopy(const std::vector<nxe_tensor_desc> &inputs)
    {
        std::vector<nxe_tensor_desc> outputs(static_cast<size_t>(NumOutputs()));
        Check(nxe_executable_run_nocopy(get(), inputs.data(), static_cast<int32_t>(inputs.size()),
                                        outputs.data(), static_cast<int32_t>(outputs.size())));
        return outputs;
    }
    nxe_tensor_desc CreateInput(int32_t index)
    {
        nxe_tensor_desc desc{};
        Check(nxe_executable_create_input(get(), index, &desc));
        return desc;
    }
    void ResetStaging()
    {
        Check(nxe_executable_reset_staging(get()));
    }
    nxe_run_stats Stats() const
    {
        nxe_run_stats stats{};
        stats.struct_size = sizeof stats;
        Check(nxe_executable_stats(get(), &stats));
        return stats;
    }
    nxe_memory_info MemoryInfo() const
    {
        nxe_memory_info info{};
        info.struct_size = sizeof info;
        Check(nxe_executable_memory_info(get(), &info));
        return info;
    }
    void ReadVariable(const std::string &name, const nxe_tensor_desc &desc)
    {
        nxe_tensor_desc copy = desc;
        Check(nxe_executable_read_variable(get(), name.c_str(), &copy));
    }
    void WriteVariable(const std::string &name, const nxe_tensor_desc &desc)
    {
        Check(nxe_executable_write_variable(get(), name.c_str(), &desc));
    }
    Binding Bind() const
    {
        return Binding(*this);
    }

  private:
    std::pair<int32_t, int32_t> Counts() const
    {
        int32_t inputs = 0, outputs = 0;
        Check(nxe_executable_io_count(get(), &inputs, &outputs));
        return {inputs, outputs};
    }
    detail::Handle<nxe_executable, detail::ReleaseExecutable> handle_;
};

inline Binding::Binding(const Executable &exe)
{
    nxe_binding *raw = nullptr;
    Check(nxe_binding_create(exe.get(), &raw));
    handle_.reset(raw);
}

/* A graph under construction. */
class Graph
{
  public:
    explicit Graph(const Context &ctx)
    {
        nxe_graph *raw = nullptr;
        Check(nxe_graph_create(ctx.get(), &raw));
        handle_.reset(raw);
    }
    nxe_graph *get() const noexcept
    {
        return handle_.get();
    }

    /* `shape` empty with ndim -1 means a rank left to inference. */
    Tensor AddTensor(const std::string &name, int32_t kind, int32_t dtype,
                     const std::vector<int64_t> &shape, bool rank_known = true)
    {
        nxe_tensor_spec spec = NXE_TENSOR_SPEC_INIT;
        spec.name = name.empty() ? nullptr : name.c_str();
        spec.kind = kind;
        spec.dtype = dtype;
        spec.ndim = rank_known ? static_cast<int32_t>(shape.size()) : -1;
        spec.shape = rank_known ? shape.data() : nullptr;
        nxe_tensor *raw = nullptr;
        Check(nxe_graph_add_tensor(get(), &spec, &raw));
        return Tensor(raw);
    }
    Tensor Input(const std::string &name, int32_t dtype, const std::vector<int64_t> &shape)
    {
        return AddTensor(name, NXE_TENSOR_INPUT, dtype, shape);
    }
    /* dtype and shape left to inference. */
    Tensor Output(const std::string &name)
    {
        return AddTensor(name, NXE_TENSOR_OUTPUT, NXE_DTYPE_NONE, {}, false);
    }
    Tensor Transient(const std::string &name = "")
    {
        return AddTensor(name, NXE_TENSOR_TRANSIENT, NXE_DTYPE_NONE, {}, false);
    }
    template <typename T>
    Tensor Constant(const std::string &name, const std::vector<T> &values,
                    const std::vector<int64_t> &shape)
    {
        Tensor t = AddTensor(name, NXE_TENSOR_CONSTANT, DTypeOf<T>(), shape);
        t.SetData(values);
        return t;
    }
    template <typename T>
    Tensor Variable(const std::string &name, const std::vector<T> &values,
                    const std::vector<int64_t> &shape)
    {
        Tensor t = AddTensor(name, NXE_TENSOR_VARIABLE, DTypeOf<T>(), shape);
        t.SetData(values);
        return t;
    }
    Tensor FindTensor(const std::string &name)
    {
        nxe_tensor *raw = nullptr;
        Check(nxe_graph_find_tensor(get(), name.c_str(), &raw));
        return Tensor(raw);
    }
    /* Adds an op, binds its tensors; on a failed binding the op is removed again. */
    Op AddOp(const std::string &type, const std::vector<Tensor> &inputs,
             const std::vector<Tensor> &outputs, const std::string &name = "")
    {
        nxe_op *raw = nullptr;
        Check(nxe_graph_add_op(get(), type.c_str(), name.empty() ? nullptr : name.c_str(), &raw));
        Op op(raw);
        try {
            op.BindInputs(inputs);
            op.BindOutputs(outputs);
        } catch (...) {
            nxe_graph_remove_op(get(), raw);
            throw;
        }
        return op;
    }
    /* An op whose attributes are set before binding (Op::Attr), then Op::BindInputs/Outputs. */
    Op AddUnboundOp(const std::string &type, const std::string &name = "")
    {
        nxe_op *raw = nullptr;
        Check(nxe_graph_add_op(get(), type.c_str(), name.empty() ? nullptr : name.c_str(), &raw));
        return Op(raw);
    }
    Executable Compile(const nxe_compile_options *options = nullptr)
    {
        nxe_executable *raw = nullptr;
        Check(nxe_graph_compile(get(), options, &raw));
        return Executable(raw);
    }
    std::vector<uint8_t> CompileToBinary(const nxe_compile_options *options = nullptr)
    {
        size_t size = 0;
        Check(nxe_graph_compile_to_binary(get(), options, nullptr, &size));
        std::vector<uint8_t> bytes(size);
        Check(nxe_graph_compile_to_binary(get(), options, bytes.data(), &size));
        bytes.resize(size);
        return bytes;
    }

  private:
    detail::Handle<nxe_graph, detail::ReleaseGraph> handle_;
};

/* Arrays passed by reference: m.Run({x, y}). */
using NDArrayRefs = std::vector<std::reference_wrapper<const NDArray>>;

/* An executable run as a virtual machine's function on NDArrays. */
class Module
{
  public:
    explicit Module(Executable exe) : exe_(std::move(exe))
    {
    }
    static Module Load(const std::string &path, const nxe_load_options *options = nullptr)
    {
        return Module(Executable::LoadFile(path, options));
    }
    Executable &executable() noexcept
    {
        return exe_;
    }

    /* Outputs copied into new arrays the caller owns. */
    std::vector<NDArray> Run(const NDArrayRefs &inputs)
    {
        std::vector<NDArray> outputs;
        std::vector<nxe_tensor_desc> out_descs;
        const int32_t n = exe_.NumOutputs();
        for (int32_t i = 0; i < n; i++) {
            nxe_tensor_desc d = exe_.OutputDesc(i);
            NDArray a = NDArray::FromDesc(d);
            outputs.push_back(NDArray::Empty(a.dtype(), a.shape()));
            out_descs.push_back(outputs.back().Desc());
        }
        exe_.Run(Descs(inputs), out_descs);
        return outputs;
    }
    /* Views of the executable's result area: valid until this thread's next run of it. */
    std::vector<NDArray> RunNoCopy(const NDArrayRefs &inputs)
    {
        std::vector<NDArray> outputs;
        for (const nxe_tensor_desc &d : exe_.RunNoCopy(Descs(inputs)))
            outputs.push_back(NDArray::FromDesc(d));
        return outputs;
    }
    /* A view of a staging slot for input `index`: fill it; runs read it in place. Valid until
     * ResetStaging. */
    NDArray CreateInput(int32_t index)
    {
        return NDArray::FromDesc(exe_.CreateInput(index));
    }
    void ResetStaging()
    {
        exe_.ResetStaging();
    }
    /* Caller buffers bound in place; the module must outlive the binding. */
    Binding Bind(const NDArrayRefs &inputs, const NDArrayRefs &outputs) const
    {
        Binding binding = exe_.Bind();
        for (size_t i = 0; i < inputs.size(); i++)
            binding.BindInput(static_cast<int32_t>(i), inputs[i].get());
        for (size_t i = 0; i < outputs.size(); i++)
            binding.BindOutput(static_cast<int32_t>(i), outputs[i].get());
        return binding;
    }

  private:
    static std::vector<nxe_tensor_desc> Descs(const NDArrayRefs &arrays)
    {
        std::vector<nxe_tensor_desc> descs;
        descs.reserve(arrays.size());
        for (const NDArray &a : arrays)
            descs.push_back(a.Desc());
        return descs;
    }
    Executable exe_;
};

} // namespace nxe

#endif /* NXE_NXE_HPP */
